"""p4c's Tofino backend on the generated TNA program: the compile, its verdict and where its reports are.

A compile that the backend refuses is a result here, not only an error: the resources experiment records the
compiler's own words for a program that does not fit. ``compile_tna`` raises; ``try_compile`` returns both.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from chimera.compile.header import render as render_header
from chimera.errors import TargetError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.targets.tofino.program import render

#: the backend's compiler proper, and the p4c driver that runs it (preprocessor, compiler, assembler)
BACKEND = "p4c-barefoot"
DRIVER = "p4c"
INSTALL_HINT = ("build p4c with its Tofino backend: scripts/build-tofino-compiler --prefix DIR (hours of "
                "CPU on 2 cores), then put DIR/bin on PATH")
PROGRAM = "chimera_tna.p4"
#: the compiler's output directory under a compile's own (its logs: pipe/logs/)
OUTPUT = "out.tofino"
#: the backend stops at 20 errors by default; a program over budget repeats one error per unrolled element, and
#: the verdict should name every kind of refusal the failing pass found
MAX_ERRORS = 10000
#: how long one compile may take: the backend's table placement backtracks, and a program far over a pipe's
#: budget can keep it searching for hours; past this it is stopped and its verdict is that it did not finish
TIMEOUT_S = 3600.0


class TofinoCompileError(TargetError):
    """The Tofino backend refused the program."""


def compiler_missing() -> str | None:
    """Why the Tofino compiler cannot run here, or None. A backend on PATH that cannot start (a shared library
    its install left out of its run path) is missing too: its refusal must not be cached as the program's verdict."""
    for tool in (BACKEND, DRIVER):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (p4c's Tofino backend is in no package registry)"
    backend = Path(shutil.which(BACKEND) or BACKEND).resolve()
    return _cannot_start(str(backend), backend.stat().st_mtime_ns, os.environ.get("LD_LIBRARY_PATH", ""))


@functools.cache
def _cannot_start(backend: str, mtime_ns: int, ld_path: str) -> str | None:
    """``backend --version``'s failure, or None where it starts (cached per binary and library path)."""
    r = subprocess.run([backend, "--version"], capture_output=True, text=True)
    if r.returncode == 0:
        return None
    said = next((ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()), f"exit status {r.returncode}")
    return (f"{backend} cannot start: {said} (put its prefix's lib/ on LD_LIBRARY_PATH, or rebuild with "
            "scripts/build-tofino-compiler, which sets the run path)")


@dataclass(frozen=True)
class Compile:
    """One compile: where its files are, whether the backend accepted the program, and its messages."""

    out_dir: Path
    ok: bool
    returncode: int
    log: str          # the driver's stdout and stderr
    version: str      # the driver's own version line

    @property
    def reason(self) -> str:
        """The compiler's own words for a refusal, one line per distinct error with how often and where it was
        said (a program over budget repeats one error per unrolled element), else the log's tail; a line names the
        program by its file name, not by this machine's build folder."""
        log = self.log.replace(f"{self.out_dir}/", "")
        said: dict[str, list[str]] = {}
        for ln in log.splitlines():
            m = ERROR_LINE.match(ln)
            if m is not None and "errors exceeded" not in ln:
                said.setdefault(m["what"].strip(" :"), []).append(m["where"] or "")
        if not said:
            return log[-2000:]
        return "\n".join(_said(what, where) for what, where in said.items())


#: one error line of the backend, ``FILE(LINE): [--Werror=KIND] error: : WHAT``, or of its assembler,
#: ``FILE:LINE: error: WHAT``, or a bare ``error: WHAT``
ERROR_LINE = re.compile(r"^(?:(?P<where>\S+\(\d+\)|\S+:\d+): )?(?:\[--Werror=[\w-]+\] )?error: (?P<what>.*)$")


def _said(what: str, where: list[str]) -> str:
    """One distinct error: its words, and the first few places it was said."""
    at = [w for w in where if w]
    places = ", ".join(at[:4]) + (f" and {len(at) - 4} more" if len(at) > 4 else "")
    times = f" (x{len(where)})" if len(where) > 1 else ""
    return f"{what}{times}" + (f" at {places}" if places else "")


@functools.cache
def driver_version(driver: Path) -> str:
    """What ``p4c --version`` says (its first line), so a refusal names the compiler that refused."""
    r = subprocess.run([str(driver), "--version"], capture_output=True, text=True)
    lines = (r.stdout or r.stderr).strip().splitlines()
    return lines[0] if lines else f"{driver.name} (no version printed)"


def try_compile(art: Artifact, build_dir: Path) -> Compile:
    """Compile the TNA program for ``art`` under ``build_dir`` (cached by the program text and the compiler)."""
    return compile_text(render(art), render_header(art), build_dir, PROGRAM)


def compile_text(text: str, header: str, build_dir: Path, program: str, timeout_s: float = TIMEOUT_S) -> Compile:
    """Compile a TNA program's ``text`` (with its constants header) as ``program`` under ``build_dir``; cached by
    the text, the header and the compiler, so a second run of the same program reads the first one's result. A
    compile stopped at ``timeout_s`` is a refusal in those words, and is not cached (a longer limit may finish)."""
    missing = compiler_missing()
    if missing is not None:
        raise ToolMissingError(f"the Tofino compiler cannot run: {missing}", INSTALL_HINT)
    driver = Path(shutil.which(DRIVER) or DRIVER).resolve()
    # -g: the backend writes its logs (pipe/logs/resources.json, mau.resources.log) only with debug information
    options = ["--target", "tofino", "--arch", "tna", "-g", "-Xp4c", f"--maxErrorCount {MAX_ERRORS}"]
    key = hashlib.sha256(text.encode() + header.encode() + str(driver).encode() + " ".join(options).encode()
                         + str(driver.stat().st_mtime_ns).encode()).hexdigest()[:16]
    out = build_dir / f"tofino-{key}"
    done = out / "compile.log"
    if done.exists():
        rc = int((out / "returncode").read_text())
        return Compile(out, rc == 0, rc, done.read_text(), driver_version(driver))
    out.mkdir(parents=True, exist_ok=True)
    (out / "chimera_constants.h").write_text(header)
    src = out / program
    src.write_text(text)
    # its own process group: the driver runs the backend as a child, and a compile past its limit stops whole
    proc = subprocess.Popen([str(driver), *options, "-I", str(out), "-o", str(out / OUTPUT), str(src)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        said, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        said, _ = proc.communicate()
        return Compile(out, False, -1, f"{said}\nerror: the compiler did not finish within {timeout_s:.0f} s "
                                       f"(chimera.targets.tofino.compiler.TIMEOUT_S)", driver_version(driver))
    finally:
        if proc.poll() is None:   # interrupted (Ctrl-C): the backend does not outlive the run
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (out / "returncode").write_text(str(proc.returncode))
    done.write_text(said)
    return Compile(out, proc.returncode == 0, proc.returncode, said, driver_version(driver))


def compile_tna(art: Artifact, build_dir: Path) -> Path:
    """The compiler's output directory for ``art``; raises with the compiler's reason where it refuses."""
    c = try_compile(art, build_dir)
    if not c.ok:
        raise TofinoCompileError(f"the Tofino backend refused the TNA program for this artifact:\n{c.reason}",
                                 f"its full log: {c.out_dir / 'compile.log'}")
    return c.out_dir / OUTPUT
