"""The scale bench's arithmetic (chimera.bench.scale): growth exponents, the superlinear stages, and the projection
to 10^8 packets, on made-up stage tables whose answers are known."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from chimera.bench.scale import PROJECT_TO, SUPERLINEAR, growth, main, projection


def _table(times: dict[str, tuple[float, float, float]], peaks: tuple[float, float, float],
           base: float = 0.5) -> pd.DataFrame:
    sizes = (100_000, 1_000_000, 10_000_000)
    return pd.DataFrame([{"packets": n, "stage": st, "seconds": t[i], "peak_rss_gib": peaks[i], "baseline_rss_gib": base}
                         for st, t in times.items() for i, n in enumerate(sizes)])


def test_exponents_name_linear_flat_and_superlinear_stages() -> None:
    t = _table({"linear": (1.0, 10.0, 100.0), "flat": (5.0, 5.0, 5.0), "square": (1.0, 100.0, 10_000.0)},
               (0.6, 1.5, 10.5))
    g = growth(t).set_index(["stage", "to_packets"])
    assert g.at[("linear", 10_000_000), "time_exponent"] == pytest.approx(1.0)
    assert g.at[("flat", 10_000_000), "time_exponent"] == pytest.approx(0.0)
    assert g.at[("square", 1_000_000), "time_exponent"] == pytest.approx(2.0)
    secs, gib, superlinear = projection(t, growth(t))
    assert superlinear == ["square"] and 2.0 > SUPERLINEAR
    k = PROJECT_TO / 10_000_000
    assert secs == pytest.approx(100.0 * k + 5.0 + 10_000.0 * k ** 2)
    # the data's memory (peak less baseline: 1.0 -> 10.0 GiB) grows linearly: 10x more data, 10x more memory
    assert gib == pytest.approx(0.5 + 10.0 * k)


def test_memory_that_grows_slower_than_the_data_is_carried_linearly() -> None:
    t = _table({"s": (1.0, 10.0, 100.0)}, (0.6, 1.5, 2.0))
    _, gib, _ = projection(t, growth(t))
    assert gib == pytest.approx(0.5 + 1.5 * PROJECT_TO / 10_000_000)
    assert math.isfinite(gib)


def test_a_size_below_the_floor_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from chimera.errors import ChimeraError
    with pytest.raises(ChimeraError, match="at least 10,000"):
        main(tmp_path, sizes=(100,))
