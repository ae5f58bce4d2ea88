"""The testbed topology h1 - s1 - h2 and its lifecycle.

``Testbed`` is a context manager: it removes what a killed earlier run left
behind (only processes recorded in its state file, verified by their command
line), builds the network with Mininet (no OVS, no controller), records the
node shells it created, and in ``finally`` stops exactly those. Never ``mn -c``.
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Host
from mininet.topo import Topo

from chimera.formats.snap import SENDER_MTU
from chimera.testbed.nodes import (SWITCHED_MTU, BuildOptions, TargetSwitch, offloads_off,
                                   quiet_host)

log = logging.getLogger(__name__)
STATE_DIR = Path(os.environ.get("CHIMERA_STATE_DIR", "/run/chimera-testbed"))
#: one testbed at a time on a machine: Mininet's node and interface names (h1, s1-eth1) would clash
LOCK_NAME = "testbed.lock"
#: the signals that stop what a testbed starts (tcpdump, tcpreplay, the switch): never blocked in them
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
#: set while a process holds the machine: its descendants (a test's subprocess, a mutant's worker) nest in it
LOCK_OWNER_ENV = "CHIMERA_TESTBED_LOCK_OWNER"


def _ancestor_holds_lock() -> bool:
    """Whether the process named by $CHIMERA_TESTBED_LOCK_OWNER is this one's ancestor (so holds the machine for
    the whole tree: waiting for it would wait for ourselves)."""
    owner = os.environ.get(LOCK_OWNER_ENV, "")
    if not owner.isdigit():
        return False
    pid = os.getppid()
    for _ in range(64):
        if pid == int(owner):
            return True
        if pid <= 1:
            return False
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


class ChimeraTopo(Topo):
    """h1 (sender) - s1 (the pipeline) - h2 (collector), and sc (software classifier host) on s1 port 3."""

    def build(self) -> None:
        h1, h2, sc = self.addHost("h1"), self.addHost("h2"), self.addHost("sc")
        s1 = self.addSwitch("s1")
        self.addLink(h1, s1, intfName1="h1-eth0", intfName2="s1-eth1")
        self.addLink(h2, s1, intfName1="h2-eth0", intfName2="s1-eth2")
        self.addLink(sc, s1, intfName1="sc-eth0", intfName2="s1-eth3")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _start_time(pid: int) -> int | None:
    """Process start time (clock ticks since boot): with the pid, identifies a process uniquely."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


#: The only processes a run starts inside its namespaces (node shells, captures, replays, BMv2).
OUR_PROCESSES = ("mininet:", "mnexec", "tcpdump", "tcpreplay", "simple_switch", "chimera.targets.software.classifier")


def _kill_netns(inode: int) -> int:
    """Kill our kinds of processes in network namespace ``inode`` (inode numbers are reused once freed,
    so a process is killed only if its command line is one this testbed starts)."""
    n = 0
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and _netns_inode(int(d.name)) == inode and \
                any(tok in _cmdline(int(d.name)) for tok in OUR_PROCESSES):
            try:
                os.kill(int(d.name), signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
    return n


def cleanup_stale() -> int:
    """Remove what earlier runs recorded but could not stop (their owner died). Returns processes killed.

    Node shells exit by themselves when their owner dies (their stdin closes);
    what can survive is a capture or replay still running in a node's
    namespace, which keeps it (and its veths) alive. Those are killed, in the
    namespaces a dead run recorded and no live run claims.
    """
    if not STATE_DIR.is_dir():
        return 0
    stale, live_ns = [], set()
    for f in STATE_DIR.glob("*.json"):
        try:
            st = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            f.unlink(missing_ok=True)
            continue
        owner = st.get("owner", -1)
        if _alive(owner) and _start_time(owner) == st.get("owner_start"):
            live_ns |= {n["netns"] for n in st.get("nodes", [])}  # a live run (this one included)
        else:
            stale.append((f, st))
    killed = 0
    for f, st in stale:
        n = sum(_kill_netns(node["netns"]) for node in st.get("nodes", [])
                if node.get("netns") and node["netns"] not in live_ns)
        for d in st.get("run_state", []):
            shutil.rmtree(d, ignore_errors=True)
        log.warning("removed leftovers of an interrupted run (%s): %d processes", f.name, n)
        killed += n
        f.unlink(missing_ok=True)
    return killed


class ProcessLock:
    """The machine-wide testbed lock as this process holds it: one flock on STATE_DIR/LOCK_NAME, counted over
    this process's testbeds.

    Another process tree's testbeds (another run, a nightly, scripts/fresh-check's box) are waited for. Within one
    process several testbeds may be up at once (the fuzzer drives eBPF and BMv2 side by side), and so may its
    descendants' (a test's subprocess while a fixture's testbed is up; a mutant's worker): they nest.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._file: Any = None      # the open lock file while any of this process's testbeds is up
        self._holders = 0           # how many of this process's testbeds are up

    def acquire(self) -> None:
        with self._guard:
            if self._holders or _ancestor_holds_lock():
                self._holders += 1
                return
            STATE_DIR.mkdir(parents=True, exist_ok=True)
            f = open(STATE_DIR / LOCK_NAME, "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                log.warning("[testbed] another process has a testbed up on this machine (%s); waiting for it",
                            f.read().strip() or "pid unknown")
                try:
                    fcntl.flock(f, fcntl.LOCK_EX)
                except BaseException:
                    f.close()
                    raise
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()}")
            f.flush()
            self._file, self._holders = f, 1
            os.environ[LOCK_OWNER_ENV] = str(os.getpid())  # a child this process starts nests in its testbeds

    def release(self) -> None:
        with self._guard:
            self._holders -= 1
            if self._holders == 0 and self._file is not None:
                self._file.close()  # closing drops the flock
                self._file = None
                os.environ.pop(LOCK_OWNER_ENV, None)


#: this process's hold on the testbed lock (one per process: the flock is per open file)
PROCESS_LOCK = ProcessLock()


class Testbed:
    """Owns one Mininet network for the duration of a ``with`` block."""

    def __init__(self, switch_cls: type[TargetSwitch], build_dir: Path, run_dir: Path,
                 build: BuildOptions | None = None) -> None:
        self.switch_cls, self.build_dir, self.run_dir = switch_cls, build_dir, run_dir
        self.build = build or BuildOptions()
        self.net: Mininet | None = None
        self.state_file = STATE_DIR / f"{os.getpid()}.json"
        self._old_term: Any = None
        self._old_mask: set[Any] | None = None
        self._lock = False

    def _take_lock(self) -> None:
        PROCESS_LOCK.acquire()
        self._lock = True

    def _release_lock(self) -> None:
        if self._lock:
            self._lock = False
            PROCESS_LOCK.release()

    def __enter__(self) -> "Testbed":
        self._take_lock()
        # every process the testbed starts inherits this thread's signal mask, and a tcpdump that inherits a
        # blocked SIGINT never stops (a Ray worker blocks it): unblocked while the testbed is up
        self._old_mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        cleanup_stale()
        # SIGTERM (a nightly job's timeout) unwinds like Ctrl-C, so `finally` blocks run
        self._old_term = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        log.info("[testbed] building h1 - s1(%s) - h2", self.switch_cls.target)
        # the switch keeps its logs (and pcaps, where it writes any) under the run's directory
        switch = functools.partial(self.switch_cls, build_dir=self.build_dir, run_dir=self.run_dir / "switch",
                                   build=self.build)
        self.net = Mininet(topo=ChimeraTopo(), switch=switch, host=Host, link=Link, controller=None,
                           autoSetMacs=True, build=False, waitConnected=False)
        try:
            self.net.build()
            self._record()
            for h in (self.h1, self.h2, self.sc):
                quiet_host(h)
                offloads_off(h, h.defaultIntf().name)
            self.h1.cmd(f"ip link set h1-eth0 mtu {SENDER_MTU}")
            self.h2.cmd(f"ip link set h2-eth0 mtu {SWITCHED_MTU}")
            self.sc.cmd(f"ip link set sc-eth0 mtu {SWITCHED_MTU}")
            self.net.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _record(self) -> None:
        """What this run created, on disk before anything else happens: the next run can remove it all."""
        assert self.net is not None
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        nodes = [{"name": n.name, "pid": n.pid, "netns": _netns_inode(n.pid)} for n in self.net.hosts + self.net.switches]
        run_state = [str(d) for sw in self.net.switches for d in getattr(sw, "run_state_dirs", lambda: [])()]
        self.state_file.write_text(json.dumps({"owner": os.getpid(), "owner_start": _start_time(os.getpid()),
                                               "started": time.time(), "nodes": nodes, "run_state": run_state}))

    @property
    def h1(self) -> Any:
        assert self.net is not None, "the testbed is not up"
        return self.net.get("h1")

    @property
    def h2(self) -> Any:
        assert self.net is not None, "the testbed is not up"
        return self.net.get("h2")

    @property
    def sc(self) -> Any:
        assert self.net is not None, "the testbed is not up"
        return self.net.get("sc")

    @property
    def s1(self) -> TargetSwitch:
        assert self.net is not None, "the testbed is not up"
        return self.net.get("s1")

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        """Teardown in a fixed order; every step runs even if one before it failed (or is interrupted), and the
        state file goes only when every step succeeded (else the next run's cleanup_stale finishes the job)."""
        st = self._state()
        if self.net is not None:  # interrupted before the state file was written: take the nodes from the net
            known = {n.get("pid") for n in st["nodes"]}
            st["nodes"] += [{"name": n.name, "pid": n.pid, "netns": _netns_inode(n.pid)}
                            for n in self.net.hosts + self.net.switches if n.pid not in known]
        steps = [("unload the dataplanes", self._unload_quietly), ("stop the network", self._stop_net),
                 ("kill what is left in the run's namespaces", lambda: self._kill_namespaces(st)),
                 ("remove the switches' run state", lambda: self._remove_run_state(st))]
        failed = 0
        for what, step in steps:
            try:
                step()
            except BaseException as e:  # noqa: BLE001 - Ctrl-C inside teardown must not skip the next step
                failed += 1
                log.error("[testbed] teardown step '%s' failed: %s: %s", what, type(e).__name__, e)
        if failed:
            log.error("[testbed] %d of %d teardown steps failed; %s kept for the next run's cleanup", failed,
                      len(steps), self.state_file)
        else:
            self.state_file.unlink(missing_ok=True)
        self.net = None
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            self._old_term = None
        if self._old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
            self._old_mask = None
        self._release_lock()

    def _state(self) -> dict[str, Any]:  # JSON in and out: the run's state file (what to clean up)
        try:
            return json.loads(self.state_file.read_text()) if self.state_file.exists() else {"nodes": []}
        except (OSError, json.JSONDecodeError):
            return {"nodes": []}

    def _stop_net(self) -> None:
        if self.net is None:
            return
        nodes = self.net.hosts + self.net.switches
        for n in nodes:  # a command interrupted by Ctrl-C leaves the shell 'waiting': Mininet would assert
            n.waiting = False
        if all(n.shell is not None and n.shell.poll() is None for n in nodes):
            log.info("[testbed] stopping (nodes, links and programs this run created)")
            self.net.stop()
        else:  # a node shell died (killed switch): Mininet would wait on it forever
            log.warning("[testbed] a node shell died; removing the run's namespaces directly")

    def _kill_namespaces(self, st: dict[str, Any]) -> None:  # JSON in: the run's state file (what to clean up)
        """Processes a node started may outlive its shell; with them gone the namespace, its veths, their tc
        filters and the programs those hold go too."""
        for node in st.get("nodes", []):
            if node.get("netns"):
                _kill_netns(node["netns"])

    def _remove_run_state(self, st: dict[str, Any]) -> None:  # JSON in: the run's state file (what to clean up)
        for d in st.get("run_state", []):
            shutil.rmtree(d, ignore_errors=True)

    def _unload_quietly(self) -> None:
        for sw in self.net.switches if self.net is not None else []:
            unload = getattr(sw, "unload", None)
            if unload is not None:
                try:
                    unload()
                except Exception as e:  # noqa: BLE001 - teardown must go on
                    log.debug("unload %s: %s", sw.name, e)
