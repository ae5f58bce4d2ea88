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


def test_the_bench_writes_its_typed_stage_rows(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each size's stages come back from their process as JSON and are read into StageRow (a stage's own columns
    stay empty for the others); scale.csv is the row class's columns and the result records the rows typed."""
    import json
    from dataclasses import asdict

    import chimera.bench.scale as S
    from chimera.formats.rundir import Manifest

    def fake(packets: int, max_train_packets: int, work) -> list[S.StageRow]:  # type: ignore[no-untyped-def]
        rows = [S.StageRow(0, "generate", packets / 1e4, 0.5 + packets / 1e6, 0.5, generated_packets=packets),
                S.StageRow(0, "compile", packets / 2e4, 0.5 + packets / 1e6, 0.5)]
        back = json.loads(json.dumps([asdict(r) for r in rows]))   # the child process's answer, as _one_size reads it
        from dataclasses import replace
        return [replace(S.StageRow(**r), packets=packets) for r in back]
    monkeypatch.setattr(S, "_one_size", fake)
    monkeypatch.setattr(S, "figure", lambda table, path: None)
    table = S.main(tmp_path, sizes=(10_000, 100_000))
    assert list(table.columns) == list(S.SCALE.columns)
    assert table["packets"].tolist() == [10_000, 10_000, 100_000, 100_000]
    assert table["generated_packets"].iloc[0] == 10_000 and pd.isna(table["generated_packets"].iloc[1])
    run = next((tmp_path / "bench-scale").iterdir())
    res = Manifest.read(run / "manifest.json").get("result", S.ScaleResult)
    assert res is not None and isinstance(res.stages[0], S.StageRow) and res.stages[2].packets == 100_000
    assert S.SCALE.read(run)["stage"].tolist()[:2] == ["generate", "compile"]
