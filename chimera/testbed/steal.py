"""How much of the CPU the hypervisor took from this guest over a span (``/proc/stat``'s steal time).

A timing run records it for every trial: on a shared host steal slows every path alike, the bare redirect too,
so an interleaved, paired design cancels its drift within a run but not the larger absolute costs of a slower
machine. A reader can only weigh a timing run against another if each says how much of its machine it had (it
is one cause of a slower machine, not the only one: two runs of the same code once differed tenfold on the bare
path at about 1% steal each).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: the aggregate line's fields, in /proc/stat's order (proc(5)); guest time is already inside user time
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """All CPUs' time since boot, in clock ticks: the hypervisor's steal, and every state's together."""

    steal: int
    total: int

    @classmethod
    def parse(cls, text: str) -> CpuTimes:
        line = next(ln for ln in text.splitlines() if ln.startswith("cpu "))
        v = [int(x) for x in line.split()[1:1 + len(FIELDS)]]
        v += [0] * (len(FIELDS) - len(v))   # kernels older than 2.6.11 have no steal column
        return cls(steal=v[FIELDS.index("steal")], total=sum(v))


def cpu_times(stat: Path = PROC_STAT) -> CpuTimes | None:
    """Now's CPU times; None where the system has no /proc/stat."""
    try:
        return CpuTimes.parse(stat.read_text())
    except (OSError, StopIteration, ValueError):
        return None


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The share of CPU time stolen between two readings, 0 to 1; None where either is missing or no tick passed."""
    if before is None or after is None or after.total <= before.total:
        return None
    return (after.steal - before.steal) / (after.total - before.total)
