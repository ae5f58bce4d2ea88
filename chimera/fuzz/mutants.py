"""Mechanical mutants of the pipeline's three implementations (``invoke mutate``).

One small change at a time, in the pipeline steps only (each target record's ``mutants.regions``: chimera.bpf.c's
parser and classifier, chimera.p4's parser and ingress, the reference core of chimera/reference/pipeline.py): an operator swapped, an
integer constant moved by one, a condition negated, a statement dropped. Coverage counters, comments,
preprocessor directives and type declarations are left alone. A mutant's id hashes its file, the text of its
line, its column and the change, so it stays the same across unrelated edits (the list of argued equivalent
mutants, docs/equivalent-mutants.yaml, refers to ids).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from chimera.errors import ConfigError
from chimera.targets.base import MutantSource
from chimera.targets.registry import mutant_sources



def sources() -> dict[str, MutantSource]:
    """Every target's mutant source by name (the target record's ``mutants``; ``invoke mutate --files``)."""
    return {name: src for name, (_, src) in mutant_sources().items()}


def source_of(file: str) -> MutantSource:
    src = sources().get(file)
    if src is None:
        raise ConfigError(f"no target's mutants are called {file!r}", f"choose from {sorted(sources())}")
    return src


OPERATORS = ("swap", "const", "negate", "drop")
#: lines never mutated: instrumentation, comments, directives, declarations without effect
SKIP = re.compile(r"^\s*(#\s*(include|pragma|if|ifdef|ifndef|else|endif|error)|//|/\*|\*|@numba|\"\"\"|from |import "
                  r"|FOR16|return;?$|})|COVER\(|st\.coverage\[|coverage\[|log\.|^\s*$")
SWAPS_C = {"+": "-", "-": "+", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||",
           "||": "&&", "&": "|", "|": "&", "<<": ">>", ">>": "<<", "^": "|"}
SWAPS_PY = {**{k: v for k, v in SWAPS_C.items() if k not in ("&&", "||")}, " and ": " or ", " or ": " and "}
OP_RE_C = re.compile(r"<<|>>|<=|>=|==|!=|&&|\|\||[+\-<>&|^]")
OP_RE_PY = re.compile(r" and | or |<<|>>|<=|>=|==|!=|[+\-<>&|^]")
INT_RE = re.compile(r"(?<![\w.])(0x[0-9A-Fa-f]+|\d+)(?![\w.])")
#: P4 type expressions whose angle brackets are not operators
P4_TYPES = re.compile(r"\b(bit|int|varbit)<\d+>|register<[^;]*?>\s*\(|\(bit<\d+>\)|\(int<\d+>\)")


@dataclass(frozen=True)
class Mutant:
    file: str          # the mutant source's name (MutantSource.name: reference, ebpf, p4)
    line: int          # 1-based
    col: int
    operator: str      # swap | const | negate | drop
    original: str
    replacement: str
    text: str          # the line as it was

    @property
    def id(self) -> str:
        key = f"{self.file}|{self.text.strip()}|{self.col}|{self.operator}|{self.original}|{self.replacement}"
        return hashlib.sha1(key.encode()).hexdigest()[:10]

    def apply(self, source: str) -> str:
        lines = source.split("\n")
        ln = lines[self.line - 1]
        assert ln == self.text, f"mutant {self.id}: the line changed"
        lines[self.line - 1] = ln[: self.col] + self.replacement + ln[self.col + len(self.original):]
        return "\n".join(lines)

    def describe(self) -> str:
        return f"{self.file}:{self.line}: {self.operator} '{self.original.strip()}' -> '{self.replacement.strip()}'"


def _region_lines(src: MutantSource, text: str) -> list[int]:
    """0-based line numbers inside the file's regions, less the coverage instrumentation: ``#ifdef
    CHIMERA_COVERAGE`` blocks, and conditions whose only effect is a coverage count."""
    out: list[int] = []
    for a, b in src.regions:
        i, j = text.find(a), text.find(b, text.find(a) + 1)
        if i < 0 or j < 0:
            raise ValueError(f"{src.path}: region markers {a!r} .. {b!r} not found")
        first, last = text.count("\n", 0, i), text.count("\n", 0, j)
        out += range(first, last)
    lines = text.split("\n")
    instrumented: set[int] = set()
    depth = 0
    for k, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("#ifdef CHIMERA_COVERAGE"):
            depth = 1
        elif depth and s.startswith(("#if", "#ifdef", "#ifndef")):
            depth += 1
        elif depth and s.startswith("#endif"):
            depth -= 1
        if depth or s.startswith("#ifdef CHIMERA_COVERAGE"):
            instrumented.add(k)
        nxt = lines[k + 1].strip() if k + 1 < len(lines) else ""
        after = lines[k + 2] if k + 2 < len(lines) else ""
        if re.match(r"^(if|elif|else if)\b.*[:)]\s*$", s) and re.search(r"COVER\(|coverage\[", nxt) and \
                not after.startswith(ln[: len(ln) - len(ln.lstrip())] + " "):
            instrumented.add(k)
    return sorted(set(out) - instrumented)


def _code_part(syntax: str, line: str) -> str:
    """The line with comments, strings and (P4) type brackets blanked out, same length."""
    s = line
    if syntax == "python":
        s = re.sub(r"#.*$", lambda m: " " * len(m.group()), s)
        s = re.sub(r"\"[^\"]*\"|'[^']*'", lambda m: " " * len(m.group()), s)
    else:
        s = re.sub(r"/\*.*?\*/|//.*$", lambda m: " " * len(m.group()), s)
        s = re.sub(r"\"[^\"]*\"", lambda m: " " * len(m.group()), s)
        if syntax == "p4":
            s = P4_TYPES.sub(lambda m: " " * len(m.group()), s)
            s = re.sub(r"@\w+\([^)]*\)", lambda m: " " * len(m.group()), s)
    return s


def _negations(syntax: str, line: str, code: str) -> list[tuple[int, str, str]]:
    out = []
    if syntax == "python":
        m = re.match(r"^(\s*)(if|elif|while) (.+):\s*$", code)
        if m:
            start = len(m.group(1)) + len(m.group(2)) + 1
            cond = line[start:len(m.group(0).rstrip()) - 1]
            out.append((start, cond, f"not ({cond})"))
        return out
    for m in re.finditer(r"\bif\s*\(", code):
        depth, k = 0, m.end() - 1
        for k in range(m.end() - 1, len(code)):
            depth += code[k] == "("
            depth -= code[k] == ")"
            if depth == 0:
                break
        if depth == 0:
            cond = line[m.end():k]
            out.append((m.end(), cond, f"!({cond})"))
    return out


def _binary(code: str, pos: int) -> bool:
    """Whether the operator at ``pos`` sits between two operands (not a sign, not a pointer arrow)."""
    before = code[:pos].rstrip()
    return bool(before) and (before[-1].isalnum() or before[-1] in ")]_")


def mutants_of(file: str, source: str | None = None) -> list[Mutant]:
    """Every mutant of ``file`` (see the module docstring), in line order."""
    src = source_of(file)
    python = src.syntax == "python"
    text = source if source is not None else src.path.read_text()
    lines = text.split("\n")
    out: list[Mutant] = []
    ops = OP_RE_PY if python else OP_RE_C
    swaps = SWAPS_PY if python else SWAPS_C
    in_table = False
    for i in _region_lines(src, text):
        line = lines[i]
        if "crc_table" in line or "_CRC_TABLE" in line:
            in_table = "{" in line and "}" not in line
            continue
        if in_table:
            in_table = "}" not in line
            continue
        if SKIP.search(line) or line.strip().startswith(("#define FOR", "@id", "header ", "struct ", "typedef")):
            continue
        code = _code_part(src.syntax, line)
        if not code.strip():
            continue
        for m in ops.finditer(code):
            o = m.group()
            if o in ("-", "+") and not _binary(code, m.start()):
                continue
            if o in ("&", "|", "^") and code[m.end():m.end() + 1] == "=":
                continue  # compound assignment: its own operator swap below
            if o == "-" and code[m.end():m.end() + 1] == ">":
                continue  # C's pointer arrow
            if o in ("<", ">") and (code[m.end():m.end() + 1] in "<>=" or code[m.start() - 1:m.start()] in "<>-="):
                continue
            out.append(Mutant(file, i + 1, m.start(), "swap", o, swaps[o], line))
        for m in re.finditer(r"(\+=|-=)", code):
            out.append(Mutant(file, i + 1, m.start(), "swap", m.group(), "-=" if m.group() == "+=" else "+=", line))
        for m in INT_RE.finditer(code):
            v = int(m.group(), 0)
            fmt = (lambda x: hex(x)) if m.group().lower().startswith("0x") else str
            for nv in (v + 1, v - 1):
                if nv >= 0:
                    out.append(Mutant(file, i + 1, m.start(), "const", m.group(), fmt(nv), line))
        for col, cond, neg in _negations(src.syntax, line, code):
            out.append(Mutant(file, i + 1, col, "negate", cond, neg, line))
        stripped = code.strip()
        droppable = (stripped.endswith(";") and not re.match(r"^(__\w+|int|long|bit|struct|const|unsigned|u?int\d+_t)\b",
                                                              stripped) and "=" in stripped) if not python \
            else bool(re.match(r"^[\w\[\], .]+(\+=|-=|\|=|&=|=)[^=]", stripped)) and not stripped.endswith((",", "(", "\\"))
        if droppable:
            indent = len(line) - len(line.lstrip())
            body = line[indent:]
            out.append(Mutant(file, i + 1, indent, "drop", body, "pass" if python else ";", line))
    return out
