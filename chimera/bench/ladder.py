"""A rate read off a ladder of fixed replay rates, and its spread over repeated ladders.

One ladder on a busy host is one draw: the highest rate chimera.p4 held with 0 lost came out at 500, 750 or
1,000 pps across runs of one BMv2 build (issue 58). So a rate is published as the median of repeated ladders with
their range, and a ladder whose lowest step already lost frames reads "below the lowest step", never 0 pps: below
every rate, it counts as the lowest reading in the median.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class LadderRead:
    """One ladder: the highest rate with 0 lost (None: its lowest step lost frames), the lowest step, and whether
    no step lost (then the rate is a lower bound: the ladder's top, or the sender's limit)."""

    pps: int | None
    lowest_step: int
    never_lost: bool


def read_ladder(steps: pd.DataFrame, rate: str = "pps", step: str = "pps", lost: str = "lost") -> LadderRead:
    """The reading of one ladder's steps (a row per step: the ``step`` asked, the ``rate`` read, where the
    sender offered less than asked, and the frames ``lost``); a step without a ``rate`` reads its ``step``."""
    held = steps[steps[lost] == 0]
    rates = held[rate].fillna(held[step]) if rate != step else held[step]
    return LadderRead(int(round(float(rates.max()))) if len(held) else None, int(steps[step].min()),
                      bool((steps[lost] == 0).all()))


@dataclass(frozen=True)
class Spread:
    """The readings of repeated ladders: their median (the lower middle of an even count: the conservative one;
    None where it is below the lowest step), their range, how many were below the lowest step and how many never
    lost."""

    n: int
    median: int | None
    low: int | None
    high: int | None
    below: int
    never_lost: int
    lowest_step: int

    def words(self) -> str:
        """The spread in words: "median 750 pps (500-1,000 over 5 ladders)", "below the lowest step (250 pps) in
        3 of 5 ladders", with "at least" where every ladder held throughout."""
        if self.median is None:
            return (f"below the lowest step ({self.lowest_step:,} pps) in {self.below} of {self.n} ladders")
        lo = f"below {self.lowest_step:,}" if self.low is None else f"{self.low:,}"
        bound = "at least " if self.never_lost == self.n else ""
        return f"median {bound}{self.median:,} pps ({lo}-{self.high:,} over {self.n} ladders)"


def spread(reads: list[LadderRead]) -> Spread:
    """The median and range of ``reads`` (a ladder below its lowest step sorts below every rate)."""
    if not reads:
        raise ValueError("no ladder to read")
    order = sorted(reads, key=lambda r: -1 if r.pps is None else r.pps)
    mid = order[(len(order) - 1) // 2]
    rates = [r.pps for r in reads if r.pps is not None]
    below = sum(r.pps is None for r in reads)
    return Spread(len(reads), mid.pps, None if below else min(rates), max(rates) if rates else None, below,
                  sum(r.never_lost for r in reads), min(r.lowest_step for r in reads))


@dataclass(frozen=True)
class RatioSpread:
    """Per repeat, the ratio of two ladders run back to back (a / b); its median and range over the repeats where
    both ladders held at some step, and how many repeats had none (a ladder below its lowest step)."""

    n: int
    median: float | None
    low: float | None
    high: float | None
    undefined: int
    upper_bound: int      # repeats where b never lost: a / b is at most that

    @property
    def is_upper_bound(self) -> bool:
        """Every defined repeat's b never lost: the median is at most what it says."""
        return self.n > self.undefined and self.upper_bound == self.n - self.undefined

    def words(self) -> str:
        if self.median is None:
            return f"undefined in {self.undefined} of {self.n} repeats (a ladder below its lowest step)"
        bound = "at most " if self.is_upper_bound else ""
        return (f"median {bound}{self.median:.3f} ({self.low:.3f}-{self.high:.3f} over "
                f"{self.n - self.undefined} repeats" + (f"; undefined in {self.undefined}" if self.undefined else "")
                + ")")


def ratio_spread(pairs: list[tuple[LadderRead, LadderRead]]) -> RatioSpread:
    """a / b per repeat, a repeat's two ladders paired (they ran back to back, so a busy spell hits both)."""
    ok = [(a, b) for a, b in pairs if a.pps is not None and b.pps]
    ratios = sorted(a.pps / b.pps for a, b in ok if a.pps is not None and b.pps)
    med = ratios[(len(ratios) - 1) // 2] if ratios else None
    return RatioSpread(len(pairs), med, ratios[0] if ratios else None, ratios[-1] if ratios else None,
                       len(pairs) - len(ok), sum(b.never_lost for _, b in ok))
