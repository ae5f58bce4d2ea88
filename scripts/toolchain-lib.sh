# Shared by scripts/build-bmv2 and scripts/build-tofino-compiler (sourced; not run): timed resumable steps and
# pinned checkouts. The sourcing script sets TOOL (its name, for messages), WORK, SOURCES and LOG first.

yield_cpu() {  # yield_cpu SCRIPT: let every other session's work go first, not only this terminal's
    # Under the kernel's autogroup scheduling (sched_autogroup_enabled=1, Debian's default), nice ranks processes
    # only within their session: a build started with setsid or from another terminal takes an equal half of the
    # CPU from an experiment despite nice -n 19 (measured here: sweep tasks took about twice as long beside it).
    # Where the script leads its own session, lower the whole session's weight too; from a shared terminal
    # session, say how instead of renicing it.
    if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0)" = 1 ]; then
        if [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ]; then
            echo 19 >/proc/self/autogroup 2>/dev/null || true
        else
            echo "$TOOL: autogroup scheduling is on, so nice -n 19 yields only to this terminal's" \
                 "processes; run it as 'setsid $1 ...' to make it yield to every other session" >&2
        fi
    fi
}

children_cpu() {  # CPU=the CPU seconds (user + system) of every child this shell has waited for so far
    # (the builtin times, run in this shell: in a $(...) subshell it would see only the subshell's children)
    times > "$LOG.times"
    CPU=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }
                         printf "%d\n", s }' "$LOG.times")
}

step() {  # step NAME COMMAND...: run (in a subshell that stops at its first failure), time, record one step
    # One line per attempt in $LOG: name, wall seconds, status, CPU seconds. A step stopped by a signal (the end of
    # a session, Ctrl-C) records what it took as "stopped", so a build resumed several times still adds up.
    local name=$1; shift
    local t0=$SECONDS c0 rc=0 CPU
    children_cpu; c0=$CPU
    echo "== $(date +%T) $name"
    trap 'children_cpu; printf "%s\t%s\tstopped\t%s\n" "$name" $((SECONDS - t0)) $((CPU - c0)) >> "$LOG"; exit 143' \
        TERM INT HUP
    # not as an if's condition: there bash ignores errexit in everything the condition runs, functions included,
    # and a failed configure went on to make
    set +e
    ( set -e; "$@" )
    rc=$?
    set -e
    trap - TERM INT HUP
    children_cpu
    if [ "$rc" -eq 0 ]; then
        printf '%s\t%s\tok\t%s\n' "$name" $((SECONDS - t0)) $((CPU - c0)) >> "$LOG"
    else
        printf '%s\t%s\tfailed\t%s\n' "$name" $((SECONDS - t0)) $((CPU - c0)) >> "$LOG"
        echo "$TOOL: step $name failed (its output is above, its logs under $WORK); fix it and run this again:" \
             "the finished steps are kept" >&2
        exit 1
    fi
}

checkout() {  # checkout NAME URL REF DIR: the pinned source tree at DIR
    local name=$1 url=$2 ref=$3 dir=$4 from=$2
    if [ -n "$SOURCES" ]; then
        from=""
        for cand in "$SOURCES/$name" "$SOURCES/$name/repo" "$SOURCES/$name.git"; do
            [ -e "$cand" ] && git -C "$cand" rev-parse --git-dir >/dev/null 2>&1 && from=$cand && break
        done
        if [ -z "$from" ]; then
            echo "$TOOL: no git repository for $name under $SOURCES (from $url)" >&2
            echo "  fix: clone $url to $SOURCES/$name, or leave out --sources to clone from GitHub" >&2
            exit 1
        fi
    fi
    if [ ! -e "$dir/.git" ]; then
        rm -rf "$dir"
        git clone -q --no-checkout "$from" "$dir"
    fi
    # also where HEAD is already the pin but nothing is checked out (a --no-checkout clone cut short): an empty index
    if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" != "$(git -C "$dir" rev-parse "$ref^{commit}" 2>/dev/null)" ] ||
       [ -z "$(git -C "$dir" ls-files | head -n 1)" ]; then
        git -C "$dir" fetch -q origin "$ref" 2>/dev/null || git -C "$dir" fetch -q --tags origin
        if ! git -C "$dir" -c advice.detachedHead=false checkout -q -f "$ref" 2>/dev/null; then
            leave_out_missing "$dir" "$ref"
            git -C "$dir" -c advice.detachedHead=false checkout -q -f "$ref"
        fi
    fi
    echo "$name $(git -C "$dir" rev-parse HEAD)"
}

leave_out_missing() {  # leave_out_missing DIR REF: check out all of REF but files whose blobs the repository lacks
    # A snapshot mirror (--sources) may list its largest files without their contents (p4c's
    # docs/compiler-design.pptx); none is a build input, so a sparse checkout leaves those out, named here.
    local dir=$1 ref=$2 tree absent missing
    tree=$(git -C "$dir" ls-tree -r "$ref")
    absent=$(echo "$tree" | awk '$2 == "blob" {print $3}' | git -C "$dir" cat-file --batch-check |
             awk '$2 == "missing" {print $1}')
    [ -n "$absent" ] || return 0
    missing=$(echo "$tree" | grep -F "$absent" | cut -f2)
    echo "$TOOL: $(basename "$dir"): left out, their contents absent from the source repository:" $missing >&2
    git -C "$dir" config core.sparseCheckout true
    git -C "$dir" config core.sparseCheckoutCone false
    local info
    info="$(git -C "$dir" rev-parse --absolute-git-dir)/info"
    mkdir -p "$info"
    { echo "/*"; echo "$missing" | sed 's|^|!/|'; } > "$info/sparse-checkout"
}

record_toolchain() {  # record_toolchain OUT TOOL...: what was built, as JSON at OUT (PREFIX/share/chimera-toolchain.json)
    # The pinned sources ($WORK/versions.txt), every step's attempts from $LOG with their totals (wall and CPU
    # seconds; a resumed build's stopped attempts count too), and each TOOL's --version from OUT's prefix bin/.
    # chimera.bench.toolchain reads it into the toolchain matrix's row (invoke bench --what toolchain).
    python3 - "$WORK/versions.txt" "$LOG" "$@" <<'PY'
import json, pathlib, subprocess, sys
versions = dict(line.split() for line in open(sys.argv[1]) if line.strip())
keys = ("step", "seconds", "status", "cpu_seconds")
attempts = [dict(zip(keys, line.split("\t"))) for line in open(sys.argv[2]).read().splitlines() if line.strip()]
totals: dict = {}
for a in attempts:
    t = totals.setdefault(a["step"], {"step": a["step"], "seconds": 0, "cpu_seconds": 0, "attempts": 0,
                                      "cpu_recorded": True})
    t["seconds"] += int(a["seconds"])
    t["cpu_seconds"] += int(a.get("cpu_seconds") or 0)
    t["cpu_recorded"] = t["cpu_recorded"] and "cpu_seconds" in a
    t["attempts"] += 1
    t["status"] = a["status"]
out = pathlib.Path(sys.argv[3])
out.parent.mkdir(parents=True, exist_ok=True)
def version(tool):
    # p4c-bm2-ss and p4c-barefoot print their own path first, then "Version ..."
    path = out.parent.parent / "bin" / tool
    try:
        r = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = [ln.strip() for ln in (r.stdout or r.stderr).splitlines() if ln.strip() and ln.strip() != str(path)]
    return said[0] if said else None
out.write_text(json.dumps({"sources": versions, "steps": list(totals.values()), "attempts": attempts,
                           "tools": {tool: version(tool) for tool in sys.argv[4:]}}, indent=2) + "\n")
print(out.read_text())
PY
}
