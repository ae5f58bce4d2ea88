"""Which code made a number: the code fingerprint, in the working tree or at any commit.

The fingerprint hashes every source file that can change a measured result: the package less the layers
that only present, time, orchestrate or check results (``PRESENTATION``, the kinds' renderers and the check
harnesses no experiment imports), the P4 programs, the rule files and
the experiment files. Python files are hashed as their syntax tree less docstrings, YAML files as their parsed
content: a comment, a docstring or a reflowed line changes no number, so it makes no run stale. C and P4
files are hashed as bytes. Two runs with equal fingerprints were made by the same result-determining code, so a
published run is **fresh** while its commit's fingerprint equals the working tree's, and **stale** (with the
commits that changed that code since) otherwise. Because the fingerprint is computed from git objects at
any commit, a run's freshness never depends on a value stored when it ran: a change of this definition
re-judges every run alike, and the golden of the nightly is compared the same way.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import subprocess
from pathlib import Path

import yaml

from chimera import paths
from chimera.errors import ResultsError

ROOT = paths.ROOT

#: packages that only present, time, orchestrate or check results: a change there cannot change a metric
PRESENTATION = ("report", "bench", "nightly", "sweep", "fuzz", "book")
#: where result-determining code lives (git pathspecs, also for `git log`)
SOURCES = ("chimera", "p4", "rules", "experiments")


#: presentation modules inside the result-determining experiments package: the report renderers (a kind's
#: render.py draws its report and figures from the run's tables, and nothing reads back what they write)
PRESENTATION_FILES = ("render.py", "yardstick_render.py")

#: check harnesses inside the result-determining targets package: they run a target to compare it with the
#: reference (the conformance tests, a bench), and no experiment imports them, so a change there cannot change
#: a published number (tests/test_readme.py checks that no module the fingerprint counts imports one)
HARNESS_FILES = ("chimera/targets/bmv2/files.py",)


def counts(rel: str) -> bool:
    """Whether a repository path (posix, relative to the root) is part of the fingerprint."""
    parts = rel.split("/")
    if parts[:2] == ["chimera", "experiments"] and parts[-1] in PRESENTATION_FILES or rel in HARNESS_FILES:
        return False
    if parts[0] == "chimera":
        return len(parts) > 2 and parts[1] not in PRESENTATION and rel.endswith((".py", ".c", ".h")) or \
            len(parts) == 2 and rel.endswith((".py", ".c", ".h"))
    if parts[0] == "p4":
        return len(parts) == 2 and rel.endswith(".p4")
    if parts[0] in ("rules", "experiments"):
        return len(parts) == 2 and rel.endswith(".yaml")
    return False


def canonical(rel: str, data: bytes) -> bytes:
    """What of a file can change a result: a Python file's syntax tree without docstrings, a YAML file's
    content; anything that does not parse (and C, P4) as its bytes."""
    try:
        if rel.endswith(".py"):
            tree = ast.parse(data)
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                        and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
            return ast.dump(tree).encode()
        if rel.endswith(".yaml"):
            return json.dumps(yaml.safe_load(data), sort_keys=True, default=str).encode()
    except (SyntaxError, ValueError, yaml.YAMLError):
        pass
    return data


_DIGESTS: dict[tuple[str, bytes], bytes] = {}


def _file_digest(rel: str, data: bytes) -> bytes:
    """sha256 of a file's canonical form (cached by content: parsing is the slow part)."""
    key = (rel[-5:], hashlib.sha1(data).digest())
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(canonical(rel, data)).digest()
    return _DIGESTS[key]


def _digest(files: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for rel, data in sorted(files):
        h.update(rel.encode() + b"\0")
        h.update(_file_digest(rel, data))
    return h.hexdigest()[:16]


def code_fingerprint(root: Path = ROOT) -> str:
    """The working tree's fingerprint (what a run made now would record)."""
    return _digest(list(_tree_files(root).items()))


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        r = subprocess.run(["git", *args], cwd=root, input=stdin, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ResultsError(f"git {' '.join(args[:2])} failed ({e})", "run from a git checkout with git installed") from None
    if r.returncode != 0:
        raise ResultsError(f"git {' '.join(args[:3])}: {r.stderr.decode(errors='replace').strip()[:200]}",
                           "the run's commit must be in this clone's history (a full clone, not a shallow one)")
    return r.stdout


@functools.lru_cache(maxsize=256)
def fingerprint_at(commit: str, root: Path = ROOT) -> str:
    """The fingerprint of the code at ``commit``, read from git objects (no checkout)."""
    return _digest(list(_files_at(commit, root)))


def _tree_files(root: Path) -> dict[str, bytes]:
    out = {}
    for top in SOURCES:
        for p in (root / top).rglob("*"):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and counts(rel) and "__pycache__" not in rel:
                out[rel] = p.read_bytes()
    return out


@functools.lru_cache(maxsize=64)
def _files_at(commit: str, root: Path) -> tuple[tuple[str, bytes], ...]:
    listing = _git(root, "ls-tree", "-r", "-z", commit, "--", *SOURCES).split(b"\0")
    entries = []
    for line in listing:
        if not line:
            continue
        meta, path = line.split(b"\t", 1)
        rel = path.decode()
        if meta.split()[1] == b"blob" and counts(rel):
            entries.append((rel, meta.split()[2].decode()))
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{sha}\n" for _, sha in entries).encode())
    files, pos = [], 0
    for rel, _ in entries:
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        files.append((rel, out[nl + 1:nl + 1 + size]))
        pos = nl + 1 + size + 1
    return tuple(files)


def changed_files(commit: str, root: Path = ROOT) -> list[str]:
    """The result-determining files whose content (as hashed) differs between ``commit`` and the working tree."""
    then = dict(_files_at(commit, root))
    now = _tree_files(root)
    return sorted(r for r in set(then) | set(now)
                  if r not in then or r not in now or _file_digest(r, then[r]) != _file_digest(r, now[r]))


def code_commits(since: str, root: Path = ROOT) -> list[str]:
    """Short hashes, oldest first, of the commits after ``since`` that touched the files that differ now."""
    files = changed_files(since, root)
    if not files:
        return []
    out = _git(root, "log", "--reverse", "--format=%h", "--abbrev=7", f"{since}..HEAD", "--", *files).decode()
    return out.split()
