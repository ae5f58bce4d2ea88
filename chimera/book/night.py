"""The nightly's own book: the claims ledger and every page re-rendered from the published runs with tonight's
runs on top, so a night that changes a claim's verdict, or any number the README shows, says so.

Nothing here writes the committed pages: the night's rendering goes into its own directory (``book/`` with the
re-rendered pages, ``claims.md``, ``claims-changes.csv``), and the summary names what moved. Committing it is a
person's decision (``invoke publish`` the night, then ``invoke book``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from chimera.book import claims as C
from chimera.book.scope import published_book
from chimera.report.book import Book
from chimera.book.render import block_differences, pages, render_text
from chimera.book.reproduce import compare
from chimera.errors import ChimeraError

log = logging.getLogger(__name__)


@dataclass
class NightBook:
    changed_verdicts: pd.DataFrame    # section, claim, published (verdict, value), tonight's
    changed_blocks: list[str]         # "page: block" whose rendering tonight differs from the committed page
    error: str | None = None

    def markdown(self) -> str:
        lines = ["## The book, re-rendered from tonight's runs", ""]
        if self.error:
            return "\n".join(lines + [f"Not rendered: {self.error}", ""])
        ch = self.changed_verdicts
        if len(ch):
            lines += [f"{len(ch)} claims of docs/claims.md change their verdict tonight:", "",
                      ch.to_markdown(index=False), ""]
        else:
            lines += ["No claim of docs/claims.md changes its verdict tonight.", ""]
        if self.changed_blocks:
            lines += ["Blocks whose numbers move tonight (`book/` here holds the pages as tonight renders them): " +
                      ", ".join(self.changed_blocks), ""]
        else:
            lines += ["Every page renders as committed.", ""]
        return "\n".join(lines)


def night_book(night: Path, root: Path) -> NightBook:
    """Render the ledger and the pages from the published runs plus ``night`` and the runs it made, into
    ``night``; compare with the published ledger and the committed pages."""
    try:
        published = published_book(root)
        runs = published.runs.with_runs([night, *sorted(p.parent for p in night.glob("runs/*/*/manifest.json"))])
        tonight = Book(runs, root)
        (night / "claims.md").write_text("# The paper's claims, with tonight's runs\n\n" + C.render(tonight) + "\n")
        cmp = compare(published, tonight)
        changed = cmp[~cmp["same_verdict"]] if len(cmp) else cmp
        cols = ["section", "claim", "published", "published_verdict", "this_machine", "this_machine_verdict"]
        changed = changed[cols].rename(columns={"this_machine": "tonight", "this_machine_verdict": "tonight_verdict"}) \
            if len(changed) else pd.DataFrame(columns=cols)
        changed.to_csv(night / "claims-changes.csv", index=False)
        moved = []
        for p in pages(root):
            rel = p.relative_to(root).as_posix()
            text = p.read_text()
            new = render_text(text, tonight, rel)
            diffs = block_differences(text, new, rel)
            if diffs:
                out = night / "book" / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(new)
                moved += [f"{rel}: {d.block}" for d in diffs]
        return NightBook(changed, moved)
    except (ChimeraError, OSError, KeyError, ValueError) as e:
        log.error("nightly: the book could not be rendered from tonight's runs: %s", e)
        return NightBook(pd.DataFrame(), [], str(e).splitlines()[0][:300])
