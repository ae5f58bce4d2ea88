"""``invoke book``: every measured number of README.md and docs/*.md, rendered from runs between markers.

A page holds generated blocks::

    <!-- book:NAME -->
    ...rendered by the block NAME (``BLOCKS``: gathered from every owner's blocks module)...
    <!-- /book:NAME -->

Prose outside the blocks interprets; every figure inside a block is computed from run directories, rounded,
with the run cited (and marked stale where its code has moved on). ``check`` re-renders and reports every
block whose text differs from the page, and every measured-looking figure typed outside a block (a long
decimal, a percentage, "N times", a rate, a time: ``typed_numbers``): the
README test is that check, so an edited number, a misattributed cell, a truncated decimal, a flipped sign or
a changed count fails it.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chimera.book import blocks, claims, front, reproduce
from chimera.book.scope import published_book
from chimera.errors import ResultsError
from chimera.experiments.kinds import PACKAGES
from chimera.report.book import Blocks, Book
from chimera.report.provenance import ROOT

log = logging.getLogger(__name__)
#: the blocks module of the bench floor (each kind's is found from the kinds' registry)
BENCH_BLOCKS = "chimera.bench.blocks"


def _owners() -> Iterator[Blocks]:
    """Every owner's blocks: the book's own, each kind's that has a ``blocks`` module, the benches'."""
    yield from (blocks.BLOCKS, front.BLOCKS, claims.BLOCKS, reproduce.BLOCKS)
    for p in PACKAGES:
        try:
            mod = importlib.import_module(f"chimera.experiments.kinds.{p}.blocks")
        except ModuleNotFoundError as e:
            if e.name != f"chimera.experiments.kinds.{p}.blocks":
                raise
            continue
        yield mod.BLOCKS
    yield importlib.import_module(BENCH_BLOCKS).BLOCKS


def gather() -> Blocks:
    """All blocks by name; a name two owners define is an error (a page could not say which renders it)."""
    out = Blocks()
    for owner in _owners():
        for name, fn in owner.items():
            out(name)(fn)
    return out


BLOCKS = gather()
BLOCK = re.compile(r"(<!-- book:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /book:(?P=name) -->)", re.S)
#: the pages a book owns blocks in
PAGES = ("README.md", "docs/*.md")
#: a number that looks measured: 4+ decimals, or a decimal with a thousands separator (0.9429, 1,887.7)
TYPED = re.compile(r"(?<![\w.])(?:\d+\.\d{4,}|\d{1,3}(?:,\d{3})+\.\d+)(?![\w.])")
#: a figure that states a measurement: a percentage (not a confidence level), an approximate figure, "N times" or
#: "xN", a rate, a time. A configured value is code (`30m`, `2^23 ns`), and code spans are not read.
MEASURED = re.compile(r"""(?<![\w.^$-])(?:
      \d+(?:[.,]\d+)*\s?%(?!\s?(?:t-)?(?:intervals?|CIs?|confidence|Wilson))
    | [~≈]\s?\d[\d,.]*
    | \d[\d,.]*\s?(?:times|×)(?!\w)
    | (?<!\w)[x×]\d[\d,.]*(?![\w-])
    | \d[\d,.]*\s?(?:[kMG]?pps|[KMG]bps|frames/s|packets/s|flows/s)(?!\w)
    | \d[\d,.]*\s?(?:s|ms|µs|us|ns|min|minutes?|seconds?|hours?|h|days?)(?![\w/])
    )""", re.X)


def pages(root: Path = ROOT) -> list[Path]:
    out: list[Path] = []
    for pat in PAGES:
        out += sorted(root.glob(pat))
    return out


@dataclass
class Difference:
    page: str
    block: str
    diff: str

    def __str__(self) -> str:
        return f"{self.page}, block {self.block}:\n{self.diff}"


def render_text(text: str, book: Book, page: str = "") -> str:
    """The page with every block re-rendered."""
    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        fn = BLOCKS.get(name)
        if fn is None:
            raise ResultsError(f"{page}: unknown book block {name!r}", f"one of: {', '.join(sorted(BLOCKS))}")
        body = fn(book).rstrip("\n") + "\n"
        return m.group(1) + body + m.group(4)
    return BLOCK.sub(one, text)


def typed_numbers(text: str) -> list[str]:
    """Measured-looking numbers outside the blocks (and outside code spans and fenced code)."""
    outside = BLOCK.sub("", text)
    outside = re.sub(r"```.*?```", "", outside, flags=re.S)
    outside = re.sub(r"`[^`\n]*`", "", outside)
    outside = re.sub(r"^    .*$", "", outside, flags=re.M)   # indented code (commands and their options)
    return TYPED.findall(outside) + MEASURED.findall(outside)


def block_differences(old: str, new: str, page: str) -> list[Difference]:
    """The blocks of ``new`` (a re-rendering of ``old``) whose text differs, each with its diff."""
    out = []
    old_blocks = {m.group("name"): m.group("body") for m in BLOCK.finditer(old)}
    for m in BLOCK.finditer(new):
        name, body = m.group("name"), m.group("body")
        if old_blocks.get(name) != body:
            d = "".join(difflib.unified_diff((old_blocks.get(name) or "").splitlines(True), body.splitlines(True),
                                             "on the page", "rendered", n=0))
            out.append(Difference(page, name, d))
    return out


def check_text(text: str, book: Book, page: str) -> list[Difference]:
    """What differs between a page and its re-rendering, and what is typed outside its blocks."""
    out = block_differences(text, render_text(text, book, page), page)
    typed = typed_numbers(text)
    if typed:
        out.append(Difference(page, "(outside the blocks)", "measured-looking numbers typed by hand: " +
                              ", ".join(typed[:12]) + " (render them in a block, or drop them)"))
    return out


def check(root: Path = ROOT, book: Book | None = None) -> list[Difference]:
    book = book or published_book(root)
    out = []
    for p in pages(root):
        out += check_text(p.read_text(), book, p.relative_to(root).as_posix())
    return out


def write(root: Path = ROOT, book: Book | None = None) -> list[Path]:
    """Re-render every page in place (atomically); returns the pages that changed."""
    book = book or published_book(root)
    changed = []
    for p in pages(root):
        old = p.read_text()
        new = render_text(old, book, p.relative_to(root).as_posix())
        if new != old:
            tmp = p.with_name(f".{p.name}.tmp")
            tmp.write_text(new)
            os.replace(tmp, p)
            changed.append(p)
            log.info("book: rendered %s", p.relative_to(root))
    return changed
