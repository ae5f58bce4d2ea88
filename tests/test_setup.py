"""`invoke setup`'s choice of torch build: the CPU one by default, never CUDA without a warning (issue 23).

Only the local-wheel path can be exercised on this project's machines; the plan for the others is checked here.
"""

from __future__ import annotations

import re
import subprocess

from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tasks() -> ModuleType:
    """What `invoke setup` plans with (the task only runs it)."""
    import chimera.provision
    return chimera.provision


@pytest.mark.parametrize("override, local, reachable, source, warns", [
    ("", True, True, "local", False),          # a local CPU wheel first
    ("", False, True, "cpu", False),           # else the CPU wheel index
    ("", False, False, "index", True),         # else the plain index, with a warning about CUDA's size
    ("index", True, True, "index", True),      # the environment variable overrides
    ("cpu-index", True, False, "cpu", False),
    ("https://mirror.example/whl/cpu", True, True, "mirror.example", False),
])
def test_torch_plan_prefers_the_cpu_build(tasks: ModuleType, override: str, local: bool, reachable: bool,
                                          source: str, warns: bool) -> None:
    plan = tasks.torch_plan(override, local, reachable)
    assert source in plan.source and plan.pip_args[-1] == tasks.TORCH
    assert bool(plan.warning) == warns and (not warns or "CUDA" in plan.warning)
    if source == "cpu":
        assert tasks.TORCH_CPU_INDEX in plan.pip_args


def test_torch_plan_names_a_bad_override(tasks: ModuleType) -> None:
    from chimera.errors import ConfigError
    with pytest.raises(ConfigError, match="CHIMERA_TORCH='cuda'.*local, cpu-index, index"):
        tasks.torch_plan("cuda", True, True)


def test_torch_pin_matches_pyproject(tasks: ModuleType) -> None:
    import tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert tasks.TORCH in deps


@pytest.mark.parametrize("os_id, version, dist", [("ubuntu", "24.04", "xUbuntu_24.04"), ("debian", "12", "Debian_12")])
def test_provision_vm_plan(tmp_path: Path, os_id: str, version: str, dist: str) -> None:
    """The Vagrant box's provisioning, exercised outside Vagrant (--dry-run: it prints, changes nothing)."""
    import subprocess
    osr = tmp_path / "os-release"
    osr.write_text(f'ID={os_id}\nVERSION_ID="{version}"\nPRETTY_NAME="{os_id} {version}"\n')
    obs = tmp_path / "home:" / "p4lang"   # p4lang's repository, as a local copy that holds the signing key
    (obs / dist).mkdir(parents=True)
    (obs / dist / "Release.key").write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\n")
    env = {"PATH": "/usr/bin:/bin", "OS_RELEASE": str(osr), "P4LANG_OBS": f"file://{tmp_path}/home:/p4lang"}
    r = subprocess.run([str(ROOT / "scripts" / "provision-vm"), "--dry-run"], capture_output=True, text=True,
                       env=env, check=True)
    assert f"home:/p4lang/{dist}/" in r.stdout
    assert "apt-get install -y -q p4lang-p4c p4lang-bmv2 p4lang-pi" in r.stdout
    assert r.stdout.rstrip().splitlines()[-2] == "+ scripts/bootstrap"  # then the README's own set-up
    # the installed p4c and BMv2 are compared with the builds the published toolchain matrix checked
    checked = re.search(r"compare the installed p4c with the checked builds: (.*)", r.stdout)
    assert checked and "1.2.4.8" in checked.group(1).split()
    switches = re.search(r"compare the installed BMv2 with the checked builds: (.*)", r.stdout)
    assert switches and {"1.15.0", "1.15.5"} <= set(switches.group(1).split())
    skip = subprocess.run([str(ROOT / "scripts" / "provision-vm"), "--dry-run", "--no-p4lang"], capture_output=True,
                          text=True, env=env, check=True)
    assert "p4lang" not in skip.stdout.replace("--no-p4lang", "")
    # a pristine machine has no curl; a plan that never asks the repository says nothing about it
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in [*Path("/usr/bin").iterdir(), *Path("/bin").iterdir()]:
        if tool.name != "curl" and not (bare / tool.name).exists():
            (bare / tool.name).symlink_to(tool)
    quiet = subprocess.run([str(ROOT / "scripts" / "provision-vm"), "--dry-run", "--no-p4lang"],
                           capture_output=True, text=True, env={**env, "PATH": str(bare)}, check=True)
    assert "curl" not in quiet.stderr and quiet.stdout.rstrip().splitlines()[-2] == "+ scripts/bootstrap"
    arm = subprocess.run([str(ROOT / "scripts" / "provision-vm"), "--dry-run"], capture_output=True, text=True,
                         env={**env, "ARCH": "arm64"}, check=True)
    assert "p4lang-p4c" not in arm.stdout and "amd64 only" in arm.stderr  # Apple silicon: no p4lang packages


def test_provision_vm_goes_on_without_a_repository_it_cannot_reach(tmp_path: Path) -> None:
    """p4lang's repository unreachable (as on this project's machines): said, with what is left out, and the
    README's set-up still runs. The plan asks with curl, which a pristine machine lacks until the real run installs
    it (the first fresh-check of this test found that)."""
    import shutil
    import subprocess
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the plan cannot ask the repository (the real run installs curl first)")
    osr = tmp_path / "os-release"
    osr.write_text('ID=debian\nVERSION_ID="12"\nPRETTY_NAME="debian 12"\n')
    env = {"PATH": "/usr/bin:/bin", "OS_RELEASE": str(osr), "P4LANG_OBS": f"file://{tmp_path}/home:/p4lang"}
    off = subprocess.run([str(ROOT / "scripts" / "provision-vm"), "--dry-run"], capture_output=True, text=True,
                         env=env, check=True)
    assert "p4lang-p4c" not in off.stdout and "cannot be reached" in off.stderr and "skipping p4c" in off.stderr
    assert off.stdout.rstrip().splitlines()[-2] == "+ scripts/bootstrap"


def test_vagrantfile_boots_ubuntu_24_04_through_provision_vm() -> None:
    vf = (ROOT / "Vagrantfile").read_text()
    assert 'config.vm.box = "bento/ubuntu-24.04"' in vf and "scripts/provision-vm" in vf


def test_fresh_check_runs_the_readmes_two_commands() -> None:
    """scripts/fresh-check reads the commands from the README: the two it finds are the two the README gives."""
    import re
    readme = (ROOT / "README.md").read_text()
    cmds = re.findall(r"^    (scripts/bootstrap && .*)$", readme, re.M)
    assert len(cmds) == 2 and cmds[1].endswith("invoke test")
    assert not any("sudo" in c for c in cmds)  # as written on a minimal Debian run as root, which has no sudo
    assert (ROOT / ".ci" / "run").read_text().count("invoke test") >= 1


@pytest.mark.parametrize("with_sudo", [True, False])
def test_bootstrap_without_root_asks_sudo_where_there_is_one(with_sudo: bool) -> None:
    """The README's set-up line starts with scripts/bootstrap, no sudo: as root it runs as written; as anyone
    else it re-runs itself under sudo where sudo exists, and otherwise says to run it as root (non-zero)."""
    import os
    import shutil
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the script as another user")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="chimera-bootstrap-") as d:  # readable by the other user (pytest's are not)
        Path(d).chmod(0o755)
        # a copy of the script where the other user can read it: a checkout under /root (mode 700, as a reader
        # root on a minimal Debian clones it) is not
        script = Path(d) / "scripts" / "bootstrap"
        script.parent.mkdir(mode=0o755)
        shutil.copy2(ROOT / "scripts" / "bootstrap", script)
        _bootstrap_as_nobody(Path(d) / "bin", script, with_sudo)


def _bootstrap_as_nobody(bin_dir: Path, script: Path, with_sudo: bool) -> None:
    import shutil
    import subprocess
    bin_dir.mkdir()
    for tool in ("id", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    if with_sudo:  # a stand-in that says how it was called
        (bin_dir / "sudo").write_text("#!/bin/sh\necho \"sudo called: $*\"\n")
        (bin_dir / "sudo").chmod(0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "-i",
                        f"PATH={bin_dir}", "/bin/bash", str(script)],
                       capture_output=True, text=True, timeout=60)
    assert "command not found" not in r.stderr, r.stderr
    if with_sudo:
        assert r.returncode == 0 and f"sudo called: -- {script}" in r.stdout, r.stderr
    else:
        assert r.returncode == 1 and "no sudo here: run it as root" in r.stderr


def test_the_vagrant_synced_folder_carries_every_tracked_file(tmp_path: Path) -> None:
    """The synced folder is rsync with the Vagrantfile's excludes. "data/" unanchored also matched chimera/data/,
    so the guest had no chimera.data and the first `vagrant up` here failed at its first import. Every file git
    tracks must arrive (rsync itself decides, in a dry run)."""
    import shutil
    import subprocess
    if shutil.which("rsync") is None:
        pytest.skip("rsync is not installed (apt-get install rsync)")
    vf = (ROOT / "Vagrantfile").read_text()
    m = re.search(r"rsync__exclude: \[(.*?)\]", vf, re.S)
    assert m, "the Vagrantfile's synced folder names no rsync__exclude"
    excludes = re.findall(r'"([^"]+)"', m.group(1))
    r = subprocess.run(["rsync", "-a", "--dry-run", "--out-format=%n", *(f"--exclude={e}" for e in excludes),
                        f"{ROOT}/", f"{tmp_path}/"], capture_output=True, text=True, check=True)
    sent = set(r.stdout.splitlines())
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    missing = [f for f in tracked.splitlines() if f not in sent and (ROOT / f).is_file()]
    assert not missing, f"{len(missing)} tracked files would not reach the VM, e.g. {missing[:3]}"


@pytest.mark.parametrize("provider", ["libvirt", "virtualbox"])
def test_vagrantfile_validates_for_both_providers(provider: str) -> None:
    """`vagrant validate` for each provider the Vagrantfile configures (where Vagrant is installed: it is no
    dependency of the project). VirtualBox's own options need VBoxManage to validate: without VirtualBox they are
    left out (--ignore-provider) and the rest is still checked."""
    import os
    import shutil
    import subprocess
    if shutil.which("vagrant") is None:
        pytest.skip("vagrant is not installed (apt-get install vagrant vagrant-libvirt)")
    plugins = subprocess.run(["vagrant", "plugin", "list"], capture_output=True, text=True, cwd=ROOT).stdout
    if provider == "libvirt" and "vagrant-libvirt" not in plugins:
        pytest.skip("the vagrant-libvirt plugin is not installed")
    ignore = provider == "virtualbox" and shutil.which("VBoxManage") is None
    r = subprocess.run(["vagrant", "validate", *(["--ignore-provider"] if ignore else [])], capture_output=True,
                       text=True, cwd=ROOT, env={**os.environ, "VAGRANT_DEFAULT_PROVIDER": provider},
                       timeout=300)
    assert r.returncode == 0 and "validated successfully" in r.stdout, r.stdout + r.stderr


def test_tasks_run_commands_where_stdin_is_a_terminal_they_do_not_control() -> None:
    """Seen in scripts/vm-boot's guest: its init's stdin is the console, a terminal that is no process's
    controlling one, and invoke's stdin mirroring died on it (tcgetpgrp: ENOTTY) at `invoke setup`'s first
    command. Here: a new session whose stdin is a pseudo-terminal it does not control runs a command through the
    tasks' own configuration."""
    import os
    import pty
    import subprocess
    import sys
    code = ("import sys; sys.path.insert(0, '.'); from tasks import ns; from invoke import Config, Context; "
            "print(Context(Config(overrides=ns.configuration())).run('echo ran', hide=True).stdout.strip())")
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdin=slave, capture_output=True, text=True,
                           start_new_session=True, timeout=120)
    finally:
        os.close(master)
        os.close(slave)
    assert p.returncode == 0 and p.stdout.strip() == "ran", p.stderr[-2000:]


@pytest.mark.parametrize(("name", "first"), [("build-tofino-compiler", "p4c"), ("build-bmv2", "PI")])
def test_a_toolchain_build_refuses_bad_input_naming_the_fix(tmp_path: Path, name: str, first: str) -> None:
    """scripts/build-tofino-compiler (issue 57) and scripts/build-bmv2 (issue 58) stop before building when their
    input is wrong, naming the fix: an unknown option, or sources they cannot find (or, on a machine without them,
    the Debian packages they need). They never download here: --sources points at an empty folder."""
    script = str(ROOT / "scripts" / name)
    assert subprocess.run([script, "--bogus"], capture_output=True, text=True, timeout=60).returncode == 2
    usage = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 0 and "--sources" in usage.stdout
    empty = tmp_path / "sources"
    empty.mkdir()
    r = subprocess.run([script, "--sources", str(empty), "--work", str(tmp_path / "work"), "--prefix",
                        str(tmp_path / "prefix")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "fix:" in r.stderr, r.stderr
    assert f"no git repository for {first} " in r.stderr or "missing Debian packages" in r.stderr, r.stderr
    assert not (tmp_path / "prefix" / "bin").exists()


def test_a_toolchain_checkout_cut_short_is_checked_out(tmp_path: Path) -> None:
    """scripts/toolchain-lib.sh's checkout: a --no-checkout clone whose HEAD is already the pin (a build stopped
    right after cloning) gets its files; it did not (HEAD matched, so nothing was checked out, and p4c's configure
    found no CMakeLists.txt). Seen failing with the empty-index condition removed."""
    src = tmp_path / "src"
    src.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(src)], check=True)
    (src / "CMakeLists.txt").write_text("project(x)\n")
    subprocess.run([*git, "-C", str(src), "add", "."], check=True)
    subprocess.run([*git, "-C", str(src), "commit", "-qm", "x"], check=True)
    ref = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    dest = tmp_path / "work" / "x"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(src), str(dest)], check=True)
    lib = ROOT / "scripts" / "toolchain-lib.sh"
    r = subprocess.run(["bash", "-c", f'set -euo pipefail; TOOL=t WORK={tmp_path} SOURCES="" LOG={tmp_path}/log; '
                        f'. {lib}; checkout x {src} {ref} {dest}'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (dest / "CMakeLists.txt").is_file() and r.stdout.strip() == f"x {ref}"


def test_a_toolchain_step_records_its_cpu_and_a_stopped_step_what_it_took(tmp_path: Path) -> None:
    """scripts/toolchain-lib.sh's step: a finished step records its wall and CPU seconds (its children's, however
    deep); a step stopped by SIGTERM to the build's process group (the end of a session) records "stopped" with
    what it took, so a build resumed several times still adds up. Seen failing with the trap removed (no line)."""
    import os
    import signal
    import time
    lib = ROOT / "scripts" / "toolchain-lib.sh"
    log = tmp_path / "steps.tsv"
    # the busy step spins until it has used 2 CPU seconds by its own clock: the log keeps whole seconds, so a step
    # of a fixed amount of work (it was sum(range(10**8))) recorded 0 on a machine that did it in under one
    busy = "import time\nwhile time.process_time() < 2: pass"
    script = (f'set -euo pipefail; TOOL=t WORK={tmp_path} SOURCES="" LOG={log}; . {lib}; '
              f'step busy python3 -c "{busy}"; step long sleep 60')
    p = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if line.rstrip().endswith(" long"):
                break
        time.sleep(1)
        os.killpg(p.pid, signal.SIGTERM)
        assert p.wait(timeout=30) == 143
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    assert [(r[0], r[2]) for r in rows] == [("busy", "ok"), ("long", "stopped")]
    assert int(rows[0][3]) >= 1 and int(rows[1][1]) >= 1 and int(rows[1][3]) == 0


def test_the_installed_libraries_are_the_locks_and_the_lock_pins_every_library_a_run_records() -> None:
    """Floats agree across machines only where the libraries computing them do: pyproject.toml states ranges, and
    Python 3.12 alone would take numpy 2.5 and scipy 1.18 where 3.11 has 2.4 and 1.17. `invoke setup` installs under
    constraints.txt, so every distribution the lock names is installed at the lock's version, and the lock names
    every package a run's manifest records plus the numeric libraries under them."""
    from importlib import metadata

    from chimera.formats.rundir import PACKAGES
    from chimera.provision import LOCK_FILE, lock_pins, normalized
    pins = lock_pins((ROOT / LOCK_FILE).read_text())
    needed = {normalized(p) for p in (*PACKAGES, "scipy", "llvmlite", "threadpoolctl")}
    assert needed <= set(pins), sorted(needed - set(pins))
    off = {}
    for name, version in pins.items():
        try:
            have = metadata.version(name).split("+")[0]   # torch 2.13.0+cpu is the lock's torch 2.13.0
        except metadata.PackageNotFoundError:
            continue   # needed by another Python only (the lock is the union over the supported ones)
        if have != version:
            off[name] = f"{have} installed, {version} locked"
    assert not off, off
    assert f"-c '{{ROOT / LOCK_FILE}}'" in (ROOT / "tasks" / "setup.py").read_text()
