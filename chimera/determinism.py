"""Single-threaded torch for the small models this project trains.

Multi-threaded float reductions are not bit-reproducible: a result would depend on thread scheduling and on the
machine's core count instead of only on the seed. At these sizes the thread pool also costs more than it saves
(rule-weight learning ran 2 to 3 times slower with 2 threads than with 1 on a 2-core machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def single_threaded() -> Iterator[None]:
    """torch on one intra-op thread inside the block; the caller's setting is restored after it."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
