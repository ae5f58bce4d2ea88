"""The toolchain bench (one row of the p4c/BMv2 matrix): it reads pytest's verdicts as they are, and refuses a
p4c or BMv2 directory that holds no p4c or BMv2, naming it, before it starts anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from chimera.bench import toolchain as T
from chimera.errors import ConfigError


def test_junit_counts_each_outcome(tmp_path: Path) -> None:
    x = tmp_path / "j.xml"
    x.write_text("""<testsuites><testsuite>
      <testcase classname="tests.test_conformance" name="a[bmv2-trace]"/>
      <testcase classname="tests.test_conformance" name="b[bmv2-trace]"><failure message="x"/></testcase>
      <testcase classname="tests.test_conformance" name="c[bmv2-switch]"><skipped message="no p4c"/></testcase>
      <testcase classname="tests.test_conformance" name="d[bmv2-switch]"><error message="setup"/></testcase>
    </testsuite></testsuites>""")
    assert T._junit(x) == (1, 2, 1, ["tests.test_conformance::b[bmv2-trace]", "tests.test_conformance::d[bmv2-switch]"])
    assert T._junit(tmp_path / "absent.xml") == (0, 0, 0, [])


def test_a_directory_without_p4c_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no p4c-bm2-ss in that directory") as e:
        T.main(results_root=tmp_path, p4c=tmp_path)
    assert "bin directory" in e.value.fix
    assert not (tmp_path / "bench-toolchain").exists()  # refused before a run directory was made


def test_a_directory_without_bmv2_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--switch .*: no simple_switch_grpc in that directory") as e:
        T.main(results_root=tmp_path, switch=tmp_path)
    assert "BMv2 build" in e.value.fix
    assert not (tmp_path / "bench-toolchain").exists()


def test_a_row_passes_only_when_everything_does() -> None:
    ok = T.ToolchainResult(p4c="p", p4c_version="v", bmv2_version="b", compiles=True, p4info_matches=True,
                           tests_passed=18)
    assert ok.passes
    assert not ok.model_copy(update={"tests_failed": 1}).passes
    assert not ok.model_copy(update={"p4info_matches": False}).passes
    assert not ok.model_copy(update={"tests_passed": 0}).passes  # all skipped is not a pass


def test_the_compile_cache_keys_on_the_compiler(tmp_path: Path) -> None:
    """Two p4c binaries never share a cached JSON: the key holds the binary's identity, and the P4Info name is one
    every p4c release reads (1.2.4.2 rejects .txtpb)."""
    import os

    from chimera.targets.bmv2.compiler import P4C_P4INFO, compiler_identity
    a, b = tmp_path / "a" / "p4c-bm2-ss", tmp_path / "b" / "p4c-bm2-ss"
    for p, body in ((a, "#!/bin/sh\n"), (b, "#!/bin/sh\n")):
        p.parent.mkdir()
        p.write_text(body)
    assert compiler_identity(str(a)) != compiler_identity(str(b))
    before = compiler_identity(str(a))
    os.utime(a, ns=(0, 0))  # the same path, upgraded in place
    assert compiler_identity(str(a)) != before
    assert P4C_P4INFO.endswith(".txt")


def test_both_compile_caches_key_on_the_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chimera.p4 and the fixed programs: another p4c compiles afresh; the same p4c reuses its JSON."""
    from chimera.targets.bmv2 import compiler as C
    from chimera.targets.bmv2.schema import REDIRECT_SOURCE

    from builders import quickstart_artifact
    calls: list[str] = []

    def fake_p4c(p4c: str, src: Path, js: Path, extra: list[str], fix: str, name: Path | None = None) -> Path:
        calls.append(p4c)
        js.write_text("{}")
        return js
    monkeypatch.setattr(C, "run_p4c", fake_p4c)
    bins = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "p4c-bm2-ss").write_text(f"#!/bin/sh\n# {d}\n")
        bins.append(str(tmp_path / d / "p4c-bm2-ss"))
    art = quickstart_artifact().art
    for compile_ in (lambda: C.compile_p4(art, tmp_path / "build"),
                     lambda: C.compile_fixed(REDIRECT_SOURCE, tmp_path / "build")):
        calls.clear()
        outs = []
        for b in (bins[0], bins[1], bins[0]):
            monkeypatch.setattr(C, "p4c_binary", lambda b=b: b)
            outs.append(compile_())
        assert calls == bins and outs[0] == outs[2] != outs[1]
