"""The slow loop against a switch under traffic: a thread that ticks every T_cp on the wall clock.

The replay enters ``LiveControl`` right after it starts sending, so tick k falls
k * T_cp / compression after the trace's start. A tick that the previous one
overran is skipped, not queued (the loop never runs behind the traffic). An
error in the loop (a failed install the configuration says to stop on, a dead
switch) ends the thread and is raised when the replay finishes.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from chimera.controlplane.loop import SlowLoop, SwitchControl

log = logging.getLogger(__name__)


class LiveControl:
    def __init__(self, switch: SwitchControl, loop: SlowLoop) -> None:
        self.switch, self.loop = switch, loop
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chimera-control", daemon=True)
        self._t0 = 0.0

    def _run(self) -> None:
        period = self.loop.period_trace_s
        k = 1
        while not self._stop.wait(max(0.0, self._t0 + k * period - time.monotonic())):
            try:
                self.loop.run_step(self.switch, time.monotonic() - self._t0)
            except BaseException as e:  # noqa: BLE001 - handed to the caller at __exit__
                self.error = e
                return
            k = max(k + 1, int((time.monotonic() - self._t0) / period) + 1)

    def __enter__(self) -> "LiveControl":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None and et is None:
            raise self.error
