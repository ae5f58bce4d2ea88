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


def test_a_builds_record_is_read_with_each_steps_attempts_summed(tmp_path: Path) -> None:
    """scripts/toolchain-lib.sh's record_toolchain writes what chimera.bench.toolchain reads: a step's attempts
    (a build resumed across sessions) add up; CPU time counts only where every attempt recorded it."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    work, prefix = tmp_path / "work", tmp_path / "prefix"
    work.mkdir()
    (work / "versions.txt").write_text("p4c 34b86e9bac\nz3 8e6f17ebd0\n")
    (work / "steps.tsv").write_text("z3\t1309\tok\np4c\t600\tstopped\t1100\np4c\t900\tok\t1700\n")
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "p4c-bm2-ss").write_text("#!/bin/sh\necho 'p4c 1.2.5.16 (SHA: x)'\n")
    (prefix / "bin" / "p4c-bm2-ss").chmod(0o755)
    r = subprocess.run(["bash", "-c", f'set -euo pipefail; TOOL=t WORK={work} SOURCES="" LOG={work}/steps.tsv; '
                        f'. {root}/scripts/toolchain-lib.sh; record_toolchain {prefix}/share/chimera-toolchain.json '
                        'p4c-bm2-ss absent-tool'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rec = T.build_record(prefix / "bin" / "p4c-bm2-ss")
    assert rec is not None and rec.sources == {"p4c": "34b86e9bac", "z3": "8e6f17ebd0"}
    steps = {s.step: s for s in rec.steps}
    assert (steps["p4c"].seconds, steps["p4c"].cpu_seconds, steps["p4c"].attempts, steps["p4c"].status) == \
        (1500, 2800, 2, "ok")
    assert rec.seconds == 2809 and rec.cpu_seconds is None   # z3's line (an older script's) has no CPU time
    assert rec.tools == {"p4c-bm2-ss": "p4c 1.2.5.16 (SHA: x)", "absent-tool": None}
    assert "0.8 h (CPU time not recorded by every step)" in T.build_lines("p4c", rec)
    assert T.build_record(tmp_path / "elsewhere" / "bin" / "p4c-bm2-ss") is None


def test_no_tofino_backend_beside_p4c_is_no_tofino_row(tmp_path: Path) -> None:
    from builders import quickstart_artifact
    assert T.tofino_check(quickstart_artifact().art, tmp_path, tmp_path / "build") is None
    assert T.tofino_line(None) == ""
    refused = T.TofinoCheck(backend="b", version="v", fits=False, reason="\nerror: too complex\nmore")
    assert T.tofino_line(refused) == "- the Tofino backend (v): the TNA program does not fit: `error: too complex`\n"


def test_the_tests_run_under_the_testbed_lock_taken_before_pytest(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait for another run's testbed happens before pytest starts, not inside a test's timeout: the child pytest
    is started with this process named as the lock's owner (so its testbeds nest), and the lock is dropped after."""
    import os
    import subprocess

    from chimera.testbed import topology
    monkeypatch.setattr(topology, "STATE_DIR", tmp_path / "state")  # a private lock file: no wait on this machine
    monkeypatch.setattr(topology, "PROCESS_LOCK", topology.ProcessLock())  # not this process's real hold
    monkeypatch.delenv(topology.LOCK_OWNER_ENV, raising=False)
    seen: dict[str, object] = {}

    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
        env = kw["env"]
        assert isinstance(env, dict)
        seen["owner"], seen["path"] = env.get(topology.LOCK_OWNER_ENV), env["PATH"]
        seen["held"] = topology.PROCESS_LOCK._holders
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(T.subprocess, "run", fake_run)
    T.run_tests("/opt/p4c/bin", tmp_path / "j.xml", tmp_path / "tests.log")
    assert seen == {"owner": str(os.getpid()), "path": "/opt/p4c/bin", "held": 1}
    assert topology.PROCESS_LOCK._holders == 0 and topology.LOCK_OWNER_ENV not in os.environ
