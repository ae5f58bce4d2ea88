"""The eBPF build's object store (chimera.targets.ebpf.build): builds at once never take each other's files, and an
object is reused exactly where the compile would read the same text."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chimera.errors import TargetError
from chimera.targets.ebpf import build

from builders import quickstart_artifact

pytestmark = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed (scripts/bootstrap)")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty store of this test's own."""
    s = tmp_path / "store"
    monkeypatch.setattr(build, "STORE", s)
    return s


def _keys(store: Path) -> set[str]:
    return {p.name for p in store.iterdir() if p.is_dir() and len(p.name) == 64}


def test_builds_at_once_into_one_folder_all_get_the_object(store: Path, tmp_path: Path) -> None:
    """Four builds of one artifact's program into one build folder at once, twice over (a miss, then hits): each
    returns the same complete object. With one fixed temporary name, one build's rename took the file another's
    clang wrote, and that build failed."""
    art = quickstart_artifact().art
    out = tmp_path / "build"
    for _ in range(2):
        with ThreadPoolExecutor(4) as pool:
            objs = list(pool.map(lambda _: build.build_object(art, out), range(4)))
        assert len(set(objs)) == 1
        assert objs[0].read_bytes()[:4] == b"\x7fELF"
    assert len(_keys(store)) == 1
    assert [p.name for p in store.iterdir() if p.name not in _keys(store)] == []   # no scratch left behind
    assert sorted(p.name for p in objs[0].parent.iterdir()) == sorted([build.CONSTANTS, "chimera.bpf.o"])


def test_an_object_is_reused_where_the_compile_reads_the_same_text(store: Path, tmp_path: Path) -> None:
    """A comment changes nothing the compiler reads: the stored object serves it. A define, another artifact's
    header or a changed line of code is a new object."""
    src = tmp_path / "src"
    shutil.copytree(build.SOURCE.parent, src, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    prog = src / "chimera.bpf.c"
    art = quickstart_artifact().art
    build.build_object(art, tmp_path / "a")
    assert len(_keys(store)) == 1
    prog.write_text("/* a comment only */\n" + build.SOURCE.read_text())
    from chimera.testbed.nodes import BuildOptions
    build.build_object(art, tmp_path / "b", BuildOptions(source=prog))
    assert len(_keys(store)) == 1
    build.build_object(quickstart_artifact(flow_slots=4096).art, tmp_path / "c")
    assert len(_keys(store)) == 2
    build.build_object(art, tmp_path / "d", BuildOptions(coverage=True))
    assert len(_keys(store)) == 3
    prog.write_text(build.SOURCE.read_text().replace("return TC_ACT_OK;", "return TC_ACT_OK + 0;", 1))
    build.build_object(art, tmp_path / "e", BuildOptions(source=prog))
    assert len(_keys(store)) == 4


def test_a_failed_compile_names_clang_and_stores_nothing(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.bpf.c"
    bad.write_text("int f(void) { return missing; }\n")
    from chimera.testbed.nodes import BuildOptions
    with pytest.raises(TargetError, match="clang failed"):
        build.build_object(quickstart_artifact().art, tmp_path / "x", BuildOptions(source=bad))
    assert list(store.iterdir()) == []
