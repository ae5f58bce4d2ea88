"""Which code made a number: a run's code fingerprint, in the working tree or at any commit.

A run's numbers depend on the code it runs, not on the whole package. A run declares where it starts
(its ``Scope``: the modules of its kind or bench and of the targets it ran on, and the data files it names, such
as its experiment YAML); its **code** is what those modules import, followed statically through the import
graph (``import`` and ``from ... import`` anywhere in a module, the ``__init__`` of every package above an
imported module, but not ``if TYPE_CHECKING:`` blocks, which never run), plus the data the reached code loads: the C
sources beside a reached module (the eBPF programs), the P4 programs where the BMv2 target is reached, the rule
files where the rules layer is. Registries import their residents by name (``importlib``), so reaching a
registry does not reach every resident: a run reaches the residents its scope names. What only presents or
reads results back (``chimera.report``, ``chimera.book``, the kinds' renderers) is never followed, unless a
scope starts there (a reproduction's code is the book).

Each file is hashed as what can change a result: a Python file as its syntax tree less docstrings, a YAML file
as its parsed content, a C or P4 file less its comments and with its white space folded, so that a comment, a
docstring or a reflowed line makes no run stale. A run is **fresh** while the fingerprint of its scope at its
commit equals the working tree's, and **stale** (with the commits that changed its code since) otherwise. A fix
to one kind stales only the runs that reach it. Because the fingerprint is computed from git objects at any
commit, freshness never depends on a value stored when the run ran, and the nightly's golden is judged the same
way, per run, at the golden's commit.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from chimera import paths
from chimera.errors import ResultsError

ROOT = paths.ROOT

#: where code and the data it loads live (git pathspecs, also for `git log`)
SOURCES = ("chimera", "p4", "rules", "experiments", "tests", "scripts")
#: files at the top of the repository that can change a number: the pins (a record of the whole suite reads them)
TOP_FILES = ("pyproject.toml", "constraints.txt", "Vagrantfile")

#: modules reached by an import but never followed: they only present or read results back (a scope that
#: starts inside one still counts it: ``Scope.modules`` are never excluded)
PRESENTATION = ("chimera.report", "chimera.book")

#: presentation modules inside the experiments and bench packages: the report renderers (a kind's render.py draws
#: its report and figures from the run's tables, and nothing reads back what they write) and the book blocks
#: (a kind's or the benches' blocks.py renders pages from published runs; no run imports it)
PRESENTATION_FILES = ("render.py", "yardstick_render.py", "blocks.py")

#: check harnesses inside the targets package: they run a target to compare it with the reference (the
#: conformance tests, a bench), and no experiment imports them (tests/test_readme.py checks that): left out of
#: ``EVERYTHING``, and part of a run's code only where its imports reach them (a bench's)
HARNESS_FILES = ("chimera/targets/bmv2/files.py",)

#: data the reached code loads, by the module that loads it: (module prefix, repository globs)
DATA: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("chimera.targets.bmv2", ("p4/*.p4",)),
    ("chimera.targets.tofino", ("p4/chimera.p4",)),   # the TNA program is cut from it (targets.tofino.program)
    ("chimera.rules", ("rules/*.yaml",)),
)

#: the claims ledger's verdict rules, in one file: a run's verdicts count where this file at the run's commit is
#: this file now (chimera.book.claims), and a published manifest records its digest at the run's commit
RULES_FILE = "chimera/book/rules.py"

#: the registries' resident tables (file -> the module-level names that list residents by name): a run's scope
#: resolves its own residents through them (chimera.book.scope: the modules of its kind and of its targets), so
#: the rest of a table is no run's code. Adding a target or a kind adds a line here and stales no other run; a
#: resident's entry names its module, and that module is the code of the runs that used it
RESIDENT_TABLES: dict[str, tuple[str, ...]] = {
    "chimera/targets/registry.py": ("TARGETS",),
    "chimera/experiments/kinds/__init__.py": ("PACKAGES",),
}

#: the suffixes of the non-Python sources that travel with the module beside them (the eBPF programs)
NATIVE = (".c", ".h")


@dataclass(frozen=True)
class Scope:
    """Where a run's code starts: dotted modules (a package is its ``__init__`` and what that imports: a kind's
    imports its run, config and tables) and repository globs of data it names. ``everything`` is the whole
    result-determining tree with the tests, the scripts and the pins (a record of the test suite, of set-up, or of
    a run this build does not know how to trace)."""

    modules: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    everything: bool = False

    def __or__(self, other: "Scope") -> "Scope":
        return Scope(tuple(sorted({*self.modules, *other.modules})), tuple(sorted({*self.files, *other.files})),
                     self.everything or other.everything)


EVERYTHING = Scope(everything=True)


def _is_candidate(rel: str) -> bool:
    """A file that can belong to some run's code: the package's sources, the P4 programs, the rule and
    experiment files."""
    parts = rel.split("/")
    if rel in TOP_FILES:
        return True
    if parts[0] in ("tests", "scripts"):   # a record of the test suite or of set-up times these
        return "__pycache__" not in parts and not rel.endswith((".pyc", ".o"))
    if parts[0] == "chimera":
        return rel.endswith((".py", *NATIVE)) and "__pycache__" not in parts
    if parts[0] == "p4":
        return len(parts) == 2 and rel.endswith(".p4")
    if parts[0] in ("rules", "experiments"):
        return len(parts) == 2 and rel.endswith(".yaml")
    return False


def module_of(rel: str) -> str:
    """The dotted module of a package path (``chimera/a/__init__.py`` -> ``chimera.a``)."""
    m = rel[:-3].replace("/", ".")
    return m[: -len(".__init__")] if m.endswith(".__init__") else m


def _presentation(module: str, rel: str) -> bool:
    return module.startswith(tuple(p + "." for p in PRESENTATION)) or module in PRESENTATION or \
        (rel.startswith(("chimera/experiments/", "chimera/bench/")) and rel.rsplit("/", 1)[-1] in PRESENTATION_FILES)


def counts(rel: str) -> bool:
    """Whether a repository path is part of ``EVERYTHING``: every candidate less presentation and harnesses."""
    if not _is_candidate(rel):
        return False
    return not (rel.endswith(".py") and _presentation(module_of(rel), rel)) and rel not in HARNESS_FILES


_C_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def strip_c_comments(text: str) -> str:
    """C or P4 source less its comments, each line's white space folded and blank lines dropped: a comment or a
    reindented line changes nothing a compiler sees (string and character literals are kept as they are; a
    line-continued preprocessor line keeps its lines)."""
    def sub(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("//"):
            return ""
        if s.startswith("/*"):
            return " " if "\n" not in s else "\n" * s.count("\n")
        return s
    lines = (" ".join(line.split()) for line in _C_TOKENS.sub(sub, text).splitlines())
    return "\n".join(line for line in lines if line)


def canonical(rel: str, data: bytes) -> bytes:
    """What of a file can change a result: a Python file's syntax tree without docstrings (a registry without its
    resident table: RESIDENT_TABLES), a YAML file's content, a C or P4 file less comments; anything that does not
    parse as its bytes."""
    try:
        if rel.endswith(".py"):
            tree = ast.parse(data)
            tables = RESIDENT_TABLES.get(rel, ())
            if tables:
                tree.body = [n for n in tree.body if not _assigns(n, tables)]
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                        and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
            return ast.dump(tree).encode()
        if rel.endswith(".yaml"):
            return json.dumps(yaml.safe_load(data), sort_keys=True, default=str).encode()
        if rel.endswith((".c", ".h", ".p4")):
            return strip_c_comments(data.decode()).encode()
    except (SyntaxError, ValueError, yaml.YAMLError, UnicodeDecodeError):
        pass
    return data


def _assigns(node: ast.stmt, names: tuple[str, ...]) -> bool:
    """Whether a module-level statement binds one of ``names`` (``X = ...`` or ``X: T = ...``)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
        else []
    return any(isinstance(t, ast.Name) and t.id in names for t in targets)


_DIGESTS: dict[tuple[str, bytes], bytes] = {}


def _file_digest(rel: str, data: bytes) -> bytes:
    """sha256 of a file's canonical form (cached by content: parsing is the slow part)."""
    key = (rel if rel in RESIDENT_TABLES else rel[-5:], hashlib.sha1(data).digest())
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(canonical(rel, data)).digest()
    return _DIGESTS[key]


_IMPORTS: dict[tuple[str, bytes], frozenset[str]] = {}


def imported_names(rel: str, data: bytes) -> frozenset[str]:
    """Every dotted name a module imports at run time (relative imports resolved; ``if TYPE_CHECKING:``
    blocks left out), whether or not it is a module: the caller keeps those that are."""
    key = (rel, hashlib.sha1(data).digest())
    if key in _IMPORTS:
        return _IMPORTS[key]
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return frozenset()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            skip |= {id(s) for n in node.body for s in ast.walk(n)}
    module = module_of(rel)
    package = module if rel.endswith("__init__.py") else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    _IMPORTS[key] = frozenset(out)
    return _IMPORTS[key]


def closure(scope: Scope, files: Mapping[str, bytes]) -> frozenset[str]:
    """The repository paths of ``files`` (a tree's candidates) that make the numbers of a run with ``scope``."""
    if scope.everything:
        return frozenset(r for r in files if counts(r))
    by_module = {module_of(r): r for r in files if r.endswith(".py")}
    roots = [m for m in scope.modules if m in by_module]
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        rel = by_module[m]
        names = set(imported_names(rel, files[rel]))
        names |= {m.rsplit(".", i)[0] for i in range(1, m.count(".") + 1)}  # importing a.b.c runs a and a.b
        for n in names:
            parts = n.split(".")
            for i in range(1, len(parts) + 1):
                p = ".".join(parts[:i])
                if p in by_module and p not in seen and (p in roots or not _presentation(p, by_module[p])):
                    stack.append(p)
    out = {by_module[m] for m in seen}
    dirs = {r.rsplit("/", 1)[0] for r in out}
    out |= {r for r in files if r.endswith(NATIVE) and r.rsplit("/", 1)[0] in dirs}
    globs = [g for prefix, gs in DATA if any(m == prefix or m.startswith(prefix + ".") for m in seen) for g in gs]
    globs += scope.files
    out |= {r for r in files if any(fnmatch.fnmatchcase(r, g) for g in globs)}
    return frozenset(out)


def _digest(files: Mapping[str, bytes], keep: Iterable[str]) -> str:
    h = hashlib.sha256()
    for rel in sorted(keep):
        h.update(rel.encode() + b"\0")
        h.update(_file_digest(rel, files[rel]))
    return h.hexdigest()[:16]


class TreeCode:
    """The working tree's code, read once: a book judges many runs against one moment, and reading the tree
    again for each run cost a night's book most of its time."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.files = _tree_files(root)
        self._closures: dict[Scope, frozenset[str]] = {}

    def closure(self, scope: Scope) -> frozenset[str]:
        if scope not in self._closures:
            self._closures[scope] = closure(scope, self.files)
        return self._closures[scope]

    def fingerprint(self, scope: Scope = EVERYTHING) -> str:
        """What a run of ``scope`` made now would record."""
        return _digest(self.files, self.closure(scope))

    def changed_files(self, commit: str, scope: Scope = EVERYTHING) -> list[str]:
        """The files of ``scope``'s code (then or now) whose content, as hashed, differs between ``commit`` and
        the working tree: a file the code reaches only now, or no longer, counts as changed."""
        then, now = _files_at(commit, self.root), self.files
        keep = _closure_at(commit, self.root, scope) | self.closure(scope)
        return sorted(r for r in keep if r not in then or r not in now
                      or _file_digest(r, then[r]) != _file_digest(r, now[r]))

    def code_commits(self, since: str, scope: Scope = EVERYTHING) -> list[str]:
        """Short hashes, oldest first, of the commits after ``since`` that changed the code of ``scope``'s files
        that differ now: a commit that touched them only in comments or docstrings changed no code (its
        canonical form is its parent's), so it is not named as the one that staled a run."""
        files = self.changed_files(since, scope)
        if not files:
            return []
        log_text = _git(self.root, "log", "--reverse", "--format=%x00%H", "--name-only", f"{since}..HEAD", "--",
                        *files).decode()
        wanted = set(files)
        touched = []
        for chunk in log_text.split("\0")[1:]:
            lines = chunk.split()
            touched.append((lines[0], [f for f in lines[1:] if f in wanted]))
        blobs = _blobs(self.root, [f"{c}{side}:{f}" for c, fs in touched for f in fs for side in ("", "^")])
        then = _closure_at(since, self.root, scope)
        out = []
        for c, fs in touched:
            moved = [f for f in fs if _digest_or_none(f, blobs[f"{c}:{f}"]) != _digest_or_none(f, blobs[f"{c}^:{f}"])]
            if not moved:
                continue
            # a file the run's code reached then changed it; one it reaches only now may have been written before
            # the run's code imported it, so there the fingerprints of the commit and its parent decide (slower)
            if any(f in then for f in moved) or \
                    fingerprint_at(c, self.root, scope) != fingerprint_at(f"{c}^", self.root, scope):
                out.append(c[:7])  # seven hex digits whatever the clone: git's %h grows where seven are ambiguous
        return out


def changed_since(since: tuple[str, ...] | list[str]) -> str:
    """Which commit first changed a run's code. Only the first is named: it is fixed once a run goes stale,
    so a page that cites the run does not change again with every later commit (naming the newest did, and
    every code commit then needed a book commit beside it)."""
    if not since:
        return "its code has uncommitted changes"
    return f"its code changed first in {since[0]}"


def code_fingerprint(root: Path = ROOT, scope: Scope = EVERYTHING) -> str:
    """The working tree's fingerprint of ``scope`` (what a run made now would record)."""
    return TreeCode(root).fingerprint(scope)


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        r = subprocess.run(["git", *args], cwd=root, input=stdin, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ResultsError(f"git {' '.join(args[:2])} failed ({e})", "run from a git checkout with git installed") from None
    if r.returncode != 0:
        raise ResultsError(f"git {' '.join(args[:3])}: {r.stderr.decode(errors='replace').strip()[:200]}",
                           "the run's commit must be in this clone's history (a full clone, not a shallow one)")
    return r.stdout


@functools.lru_cache(maxsize=1024)
def fingerprint_at(commit: str, root: Path = ROOT, scope: Scope = EVERYTHING) -> str:
    """The fingerprint of ``scope``'s code at ``commit``, read from git objects (no checkout)."""
    files = _files_at(commit, root)
    return _digest(files, _closure_at(commit, root, scope))


def _tree_files(root: Path) -> dict[str, bytes]:
    out = {}
    for top in SOURCES:
        for p in (root / top).rglob("*"):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and _is_candidate(rel):
                out[rel] = p.read_bytes()
    out |= {f: (root / f).read_bytes() for f in TOP_FILES if (root / f).is_file()}
    return out


@functools.lru_cache(maxsize=1024)
def _closure_at(commit: str, root: Path, scope: Scope) -> frozenset[str]:
    return closure(scope, _files_at(commit, root))


@functools.lru_cache(maxsize=64)
def _files_at(commit: str, root: Path) -> dict[str, bytes]:
    listing = _git(root, "ls-tree", "-r", "-z", commit, "--", *SOURCES, *TOP_FILES).split(b"\0")
    entries = []
    for line in listing:
        if not line:
            continue
        meta, path = line.split(b"\t", 1)
        rel = path.decode()
        if meta.split()[1] == b"blob" and _is_candidate(rel):
            entries.append((rel, meta.split()[2].decode()))
    blobs = _blobs(root, [sha for _, sha in entries])
    return {rel: data for rel, sha in entries if (data := blobs[sha]) is not None}


def _blobs(root: Path, specs: list[str]) -> dict[str, bytes | None]:
    """The content of each object in ``specs`` (a blob's id, or ``<commit>:<path>``; None where it is missing),
    read in one git call."""
    if not specs:
        return {}
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in specs).encode())
    got: dict[str, bytes | None] = {}
    pos = 0
    for spec in specs:
        nl = out.index(b"\n", pos)
        head = out[pos:nl].split()
        if head[-1] == b"missing":
            got[spec], pos = None, nl + 1
            continue
        size = int(head[2])
        got[spec], pos = out[nl + 1:nl + 1 + size], nl + 1 + size + 1
    return got


def _digest_or_none(rel: str, data: bytes | None) -> bytes | None:
    return None if data is None else _file_digest(rel, data)


def file_digest_at(commit: str, rel: str, root: Path = ROOT) -> bytes | None:
    """The canonical digest of one candidate file at ``commit`` (None where it did not exist there)."""
    data = _files_at(commit, root).get(rel)
    return None if data is None else _file_digest(rel, data)


def file_digest_now(rel: str, root: Path = ROOT) -> bytes | None:
    """The canonical digest of one file in the working tree (None where it does not exist)."""
    p = root / rel
    return _file_digest(rel, p.read_bytes()) if p.is_file() else None
