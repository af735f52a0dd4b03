#!/bin/bash
# Resource limits (docs/spec.md, "Compute limits") and what the report says about them
# (docs/report.md). Probes from tests/helpers push each limit from inside: memhog (memory),
# forkbomb (pids), cpuburn (CPU quota and time), diskfill (disk, file size).
# As root, cgroups enforce memory, pids, cpus and cpu_time; rootless, rlimits do (per process)
# and cpus is not enforced: each case asserts what its mode promises.
# Every run is bounded: a --timeout on each, and the probes stop themselves.
. "$(dirname "$0")/lib.sh"
# run_sb sets them by name
out='' st=''

for p in "${MEMHOG:-}" "${FORKBOMB:-}" "${CPUBURN:-}" "${DISKFILL:-}"; do
	if [ ! -x "$p" ]; then
		echo "Bail out! probe '$p' missing: MEMHOG, FORKBOMB, CPUBURN, DISKFILL (run.sh stages them)"
		exit 1
	fi
done
probes=(--ro-bind "$MEMHOG:/probe/memhog" --ro-bind "$FORKBOMB:/probe/forkbomb"
	--ro-bind "$CPUBURN:/probe/cpuburn" --ro-bind "$DISKFILL:/probe/diskfill")
MiB=1048576
# Debian's python3 (dev/deps installs it): a python3 earlier in PATH may be a slow shim
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# What enforces memory, pids and cpu_time: the cgroup version as root (v1 where the
# memory controller is mounted on its own hierarchy), rlimits rootless.
if [ "$MODE" = root ]; then
	if [ "$(stat -fc %T /sys/fs/cgroup/memory 2>/dev/null)" = cgroupfs ]; then
		CG=cgroup-v1
	else
		CG=cgroup-v2
	fi
	CG_OR_RLIMIT=$CG
else
	CG_OR_RLIMIT=rlimit
fi

# Python that loads argv[1] (a file, or - for stdin) as `d`. When the text is not one JSON
# document (a probe's output mixed with its stderr), the last line that is a JSON object is.
PY_LOAD='
import json, sys
text = (sys.stdin if sys.argv[1] == "-" else open(sys.argv[1], errors="replace")).read()
try:
    d = json.loads(text)
except ValueError:
    d = None
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                d = json.loads(line)
                break
            except ValueError:
                pass
'

# jget FILE|- PATH: one field, PATH dotted (limits.memory.value). Strings print bare,
# null/true/false as in JSON, numbers as Python prints them; "<missing>" when there is no
# such field.
jget() {
	"$PY" -c "$PY_LOAD"'
v = d
for k in sys.argv[2].split("."):
    if not isinstance(v, dict) or k not in v:
        print("<missing>")
        sys.exit(0)
    v = v[k]
print(v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v))
' "$1" "$2" 2>/dev/null || echo "<missing>"
}

# jcalc FILE|- EXPR: a Python expression over the document d, e.g. d["wall_s"] * 2;
# "<missing>" when it cannot be computed
jcalc() {
	"$PY" -c "$PY_LOAD"'
print(round(eval(sys.argv[2]), 4))
' "$1" "$2" 2>/dev/null || echo "<missing>"
}

# jsum KEY: the sum of KEY over the JSON-object lines on stdin (several probe runs)
jsum() {
	"$PY" -c '
import json, sys
print(sum(json.loads(l)[sys.argv[1]] for l in sys.stdin if l.startswith("{")))
' "$1" 2>/dev/null || echo "<missing>"
}

CPU='d["cpu_user_s"] + d["cpu_sys_s"]'

# expect_range DESC LO HI VALUE: a number with LO <= VALUE <= HI
expect_range() {
	if [[ "$4" =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] &&
		awk -v v="$4" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v + 0 >= lo + 0 && v + 0 <= hi + 0) }'; then
		ok "$1 ($4)"
	else
		not_ok "$1"
		diag "expected a number in [$2, $3]" "     got: $(printf %q "$4")"
	fi
}

# expect_limit REPORT NAME VALUE ENFORCED_BY: the report's limits.NAME
expect_limit() {
	local v e
	v=$(jget "$1" "limits.$2.value")
	e=$(jget "$1" "limits.$2.enforced_by")
	if [[ "$v" =~ ^[0-9.eE+-]+$ ]] && awk -v a="$v" -v b="$3" 'BEGIN { exit !(a + 0 == b + 0) }' &&
		[ "$e" = "$4" ]; then
		ok "... limits.$2 is {value: $3, enforced_by: $4}"
	else
		not_ok "... limits.$2 is {value: $3, enforced_by: $4}"
		diag "got value $(printf %q "$v"), enforced_by $(printf %q "$e")"
	fi
}

# ---- memory ---------------------------------------------------------------------------
# A bomb that touches up to 4 GiB under a 256M limit. Root: the memory cgroup's OOM killer
# acts and the whole sandbox goes, reason oom. Rootless: RLIMIT_DATA makes malloc fail first
# (memhog says ENOMEM), though an OOM kill is fine too. Either way it never gets past 256M.
r=$T_TMP/memory.json
run_sb out st "${probes[@]}" --timeout 60 --memory 256M --report "$r" -- /probe/memhog 4096
last=$(printf '%s\n' "$out" | sed -n 's/^memhog: \([0-9]*\) MiB$/\1/p' | tail -n 1)
reason=$(jget "$r" reason)
if [ "$MODE" = root ]; then
	expect_eq "memory bomb under --memory 256M: reason oom" oom "$reason"
	expect_eq "... the sandbox was killed (137)" 137 "$st"
	expect_range "... oom_kills >= 1" 1 1000000 "$(jget "$r" oom_kills)"
	expect_range "... peak_memory_bytes near the limit (200-260 MiB)" $((200 * MiB)) \
		$((260 * MiB)) "$(jget "$r" peak_memory_bytes)"
else
	if [ "$reason" = oom ] || [ "$(printf '%s\n' "$out" | jget - error)" = ENOMEM ]; then
		ok "memory bomb under --memory 256M: malloc fails with ENOMEM (or reason oom: $reason)"
	else
		not_ok "memory bomb under --memory 256M: neither ENOMEM nor reason oom"
		diag "reason: $reason, status $st" "output: $(printf '%s' "$out" | tail -n 3)"
	fi
	expect_range "... peak_memory_bytes at most 260 MiB" 0 $((260 * MiB)) \
		"$(jget "$r" peak_memory_bytes)"
fi
expect_range "... it got going, and never past 256 MiB (last progress line, MiB)" 16 256 "$last"
expect_limit "$r" memory $((256 * MiB)) "$CG_OR_RLIMIT"

# An OOM kill of one process ends the whole sandbox, every time: the shell that ran the
# victim must not live on to say "alive" (cgroup v1 signals the OOM before it counts the
# kill). Rootless there is no OOM killer of the sandbox's own: malloc fails instead.
if [ "$MODE" = root ]; then
	reasons=
	for i in $(seq 20); do
		run_sb out st --timeout 60 --memory 256M --report "$T_TMP/oom-loop.json" -- \
			sh -c "$PY -c 'bytearray(1 << 30)'; sleep 1; echo alive"
		reasons="$reasons $(jget "$T_TMP/oom-loop.json" reason)"
		case "$out" in *alive*) reasons="$reasons(alive)" ;; esac
	done
	expect_eq "20 OOM kills of a child: 20 sandboxes ended, reason oom" \
		"$(printf ' oom%.0s' $(seq 20))" "$reasons"
	rm -f "$T_TMP/oom-loop.json"
fi

# ---- pids -----------------------------------------------------------------------------
# A fork bomb under --pids 64 (forkbomb stops by itself after 100 refused forks in a row):
# forks are refused with EAGAIN well before 64, and nothing it forked outlives the run.
r=$T_TMP/pids.json
run_sb out st "${probes[@]}" --timeout 60 --pids 64 --report "$r" -- /probe/forkbomb
forked=$(printf '%s\n' "$out" | jget - forked)
expect_range "fork bomb under --pids 64: contained (forked < 64)" 1 63 "$forked"
expect_range "... refused forks are visible to it" 1 1000000 "$(printf '%s\n' "$out" | jget - fork_errors)"
expect_eq "... as EAGAIN" EAGAIN "$(printf '%s\n' "$out" | jget - errno)"
expect_match "... reason pids or exited" '^(pids|exited)$' "$(jget "$r" reason)"
peak=$(jget "$r" pids_peak)
if [ "$peak" = null ]; then
	ok "... pids_peak is null (the kernel does not report it: cgroup v1, or no cgroup)"
else
	expect_range "... pids_peak at most the limit" 1 64 "$peak"
fi
expect_limit "$r" pids 64 "$CG_OR_RLIMIT"
sleep 0.2
expect_eq "... no forked process survives" "" "$(own_pids '^/probe/forkbomb')"

# A command that fails after refused forks ends with reason pids where the kernel counts the
# refusals (the pids cgroup); rootless nothing does, and it is a plain exit.
r=$T_TMP/pids-fail.json
run_sb out st "${probes[@]}" --timeout 60 --pids 64 --report "$r" -- \
	sh -c '/probe/forkbomb >/dev/null; exit 1'
if [ "$MODE" = root ]; then
	expect_eq "a command failing after refused forks: reason pids" pids "$(jget "$r" reason)"
else
	expect_eq "a command failing after refused forks: reason exited (rootless)" exited \
		"$(jget "$r" reason)"
fi
expect_eq "... with its own exit status" 1 "$st"

# ---- CPU time ---------------------------------------------------------------------------
r=$T_TMP/cpu-time.json
run_sb out st "${probes[@]}" --timeout 60 --cpu-time 1 --report "$r" -- /probe/cpuburn 0
expect_eq "CPU spin under --cpu-time 1: reason cpu_time" cpu_time "$(jget "$r" reason)"
# (wall time is the machine's to give: only a bound far from the 60 s timeout is asserted)
expect_range "... ended long before its 60 s timeout" 0 30 "$(jget "$r" wall_s)"
# the budget is the sandbox's: what init and the kernel spend for it counts too, so the
# command's own share can fall a little short of 1 s (0.88 seen as root while a benchmark ran)
expect_range "... after about 1 s of CPU" 0.7 2.0 "$(jcalc "$r" "$CPU")"
expect_limit "$r" cpu_time 1 "$CG_OR_RLIMIT"

# cpu_time is the whole sandbox's: four spinning processes share one budget of 2 s, and a
# fifth that sleeps and spends none is ended with them. Counted per process (RLIMIT_CPU),
# each spinner would die alone and the sleeper would keep the command until its 60 s
# timeout (reason timeout): no wall-clock bound needed, however loaded the machine.
# Rootless it is per process.
if [ "$MODE" = root ]; then
	r=$T_TMP/cpu-time-sandbox.json
	run_sb out st "${probes[@]}" --timeout 60 --cpu-time 2 --report "$r" -- \
		sh -c 'for i in 1 2 3 4; do /probe/cpuburn 0 & done; sleep 100 & wait'
	expect_eq "--cpu-time counts the whole sandbox: reason cpu_time" cpu_time "$(jget "$r" reason)"
	expect_range "... the sleeper that spent nothing ended with the spinners" 0 59 "$(jget "$r" wall_s)"
else
	ok "--cpu-time counts the whole sandbox # SKIP rootless: RLIMIT_CPU is per process"
fi

# ---- wall clock ---------------------------------------------------------------------------
r=$T_TMP/timeout.json
run_sb out st --timeout 1 --report "$r" -- sleep 100
expect_eq "sleep 100 under --timeout 1: reason timeout" timeout "$(jget "$r" reason)"
expect_eq "... killed (137)" 137 "$st"
# not before its time; how late a loaded machine runs the timer is not the test's to say
expect_range "... wall_s not under 1 s (less a timer's slack)" 0.9 10 "$(jget "$r" wall_s)"
expect_limit "$r" timeout 1 timer

# ---- CPU quota -------------------------------------------------------------------------
# Two spinning threads under --cpus 0.5 for 3 s: CPU time about half the wall time (unlimited
# it would be twice). The CFS period is 100 ms, so the quota is exact to a period (0.05 CPU-s)
# over 3 s; wall_s also counts start-up and the kill. The quota is a ceiling: at most 0.65
# of wall time tells 0.5 from 1 or 2; how much of it a loaded machine gives is its own.
r=$T_TMP/cpus.json
if [ "$MODE" = root ]; then
	run_sb out st "${probes[@]}" --cpus 0.5 --timeout 3 --report "$r" -- /probe/cpuburn 0 2
	expect_eq "two threads spinning under --cpus 0.5: ended by the timeout" timeout \
		"$(jget "$r" reason)"
	expect_range "... CPU time is at most 0.65 of wall time" 0.05 0.65 \
		"$(jcalc "$r" "($CPU) / d['wall_s']")"
	expect_limit "$r" cpus 0.5 "$CG"
	run_sb out st --require cpus -- true
	expect_eq "--require cpus runs as root" 0 "$st"
else
	run_sb out st --cpus 0.5 --report "$r" -- true
	expect_eq "--cpus rootless: the command still runs" 0 "$st"
	expect_limit "$r" cpus 0.5 none
	run_sb out st --require cpus -- true
	expect_eq "--require cpus is refused rootless" 125 "$st"
	expect_match "... naming limits.required" "limits.required" "$out"
fi

# ---- disk -----------------------------------------------------------------------------
# One tmpfs of --disk bytes holds the writable layer, /tmp, home and the private workspace:
# writes past it get ENOSPC inside, and land nowhere else. 40-63 MiB: all of it but what
# the root's own files take, whole blocks only.
r=$T_TMP/disk.json
run_sb out st "${probes[@]}" --timeout 60 --disk 64M --report "$r" -- /probe/diskfill /tmp 100
expect_eq "disk fill under --disk 64M: ENOSPC inside" ENOSPC "$(printf '%s\n' "$out" | jget - errno)"
expect_range "... having written 40-63 MiB to its own tmpfs" 40 63 \
	"$(printf '%s\n' "$out" | jget - written_mib)"
expect_eq "... the probe exits 0: reason exited" exited "$(jget "$r" reason)"
expect_limit "$r" disk $((64 * MiB)) tmpfs

run_sb out st "${probes[@]}" --timeout 60 --disk 64M -- sh -c \
	'for d in /tmp /workspace /home/user /usr/local; do /probe/diskfill $d 20; done'
expect_range "/tmp, workspace, home and /usr/local share the 64M" 40 63 \
	"$(printf '%s\n' "$out" | jsum written_mib)"
expect_eq "... the last one finds it full" ENOSPC "$(printf '%s\n' "$out" | jget - errno)"

# --disk is the sandbox's own disk: what it writes through a writable host bind is the host's
# (this kernel has no project quotas), and the report says so rather than claim a bound.
dws=$T_TMP/disk-ws
mkdir -p "$dws"
chmod 755 "$dws"
give_to_user "$dws"
r=$T_TMP/disk-binds.json
run_sb out st --timeout 60 --disk 16M --workspace "$dws" --report "$r" -- sh -c \
	'head -c 20M /dev/zero >/workspace/f && echo wrote'
expect_eq "a writable workspace is not bounded by --disk 16M: 20M went to the host" \
	"wrote $((20 * MiB))" "$out $(stat -c %s "$dws/f" 2>&1)"
expect_eq "...and the report says nothing bounds it" "none 1" \
	"$(jget "$r" limits.disk_binds.enforced_by) $(jget "$r" limits.disk_binds.writable_binds)"
rm -f "$dws/f"
run_sb out st --timeout 60 --disk 16M --workspace "$dws" --require disk -- true
expect_eq "--require disk with a writable host bind is refused (125)" 125 "$st"
expect_match "...naming limits.required and why" "limits.required: limit 'disk' is required, but it bounds only the sandbox's own disk" "$out"
run_sb out st --timeout 60 --disk 16M --ro-bind "$dws:/data" --require disk -- true
expect_eq "...read-only binds are fine: nothing is written there" 0 "$st"

r=$T_TMP/disk-fail.json
run_sb out st --timeout 60 --disk 64M --report "$r" -- sh -c 'head -c 100M /dev/zero >/tmp/f'
expect_eq "a command failing with the disk full: reason disk" disk "$(jget "$r" reason)"
expect_eq "... with its own exit status" 1 "$st"

# ---- file size, open files ----------------------------------------------------------------
r=$T_TMP/file-size.json
run_sb out st "${probes[@]}" --timeout 60 --file-size 1M --report "$r" -- \
	/probe/diskfill --one-file /tmp/big 4
expect_eq "a file past --file-size 1M: EFBIG" EFBIG "$(printf '%s\n' "$out" | jget - errno)"
expect_eq "... after exactly 1 MiB" 1 "$(printf '%s\n' "$out" | jget - written_mib)"
expect_limit "$r" file_size $MiB rlimit

r=$T_TMP/nofile.json
run_sb out st --timeout 60 --nofile 64 --report "$r" -- sh -c 'ulimit -Sn; ulimit -Hn'
expect_eq "--nofile 64 sets both soft and hard limits" "64
64" "$out"
expect_limit "$r" nofile 64 rlimit

# ---- captured output ----------------------------------------------------------------------
# 1 GiB to stdout under --output-limit 1M: paddock relays the first MiB, drops the rest, kills
# the sandbox, and stays small while doing it. 64 KiB of slack: one pipe's worth.
r=$T_TMP/output.json
flood() { # flood NAME CMD...: run under --output-limit 1M, stdout/stderr/max RSS to files
	local name=$1
	shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o "$T_TMP/$name.rss" "$PADDOCK" run --timeout 60 \
			--output-limit 1M --report "$T_TMP/$name.json" -- "$@" \
			</dev/null >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	else
		"$PADDOCK" run --timeout 60 --output-limit 1M --report "$T_TMP/$name.json" -- "$@" \
			</dev/null >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
	fi
}
flood output head -c 1G /dev/zero
expect_eq "1 GiB of stdout under --output-limit 1M: reason output" output "$(jget "$r" reason)"
expect_eq "... output_truncated" true "$(jget "$r" output_truncated)"
expect_range "... the host got the first 1 MiB, give or take 64 KiB" $((MiB - 65536)) \
	$((MiB + 65536)) "$(stat -c %s "$T_TMP/output.out")"
expect_limit "$r" output $MiB relay
if [ -x /usr/bin/time ]; then
	expect_range "... paddock's max RSS stayed under 64 MiB (KiB)" 1 65536 \
		"$(tail -n 1 "$T_TMP/output.rss")"
else
	ok "... paddock's max RSS stayed small # SKIP no /usr/bin/time"
fi

flood output-err sh -c 'head -c 1G /dev/zero >&2'
expect_eq "1 GiB of stderr: reason output" output "$(jget "$T_TMP/output-err.json" reason)"
expect_range "... the host got at most 1 MiB + 64 KiB" 0 $((MiB + 65536)) \
	"$(stat -c %s "$T_TMP/output-err.err")"

flood output-both sh -c 'head -c 600K /dev/zero; head -c 600K /dev/zero >&2'
expect_eq "600K on each of stdout and stderr: reason output (they share the limit)" output \
	"$(jget "$T_TMP/output-both.json" reason)"
expect_range "... the host got at most 1 MiB + 64 KiB in all" 0 $((MiB + 65536)) \
	$(($(stat -c %s "$T_TMP/output-both.out") + $(stat -c %s "$T_TMP/output-both.err")))

flood output-small sh -c 'echo hello; echo world >&2'
expect_eq "output under the limit: reason exited" exited "$(jget "$T_TMP/output-small.json" reason)"
expect_eq "... output_truncated false" false "$(jget "$T_TMP/output-small.json" output_truncated)"
expect_eq "... stdout intact" hello "$(cat "$T_TMP/output-small.out")"
expect_match "... stderr intact" "world" "$(cat "$T_TMP/output-small.err")"

# ---- no core files ----------------------------------------------------------------------------
# Whatever the caller's limit (unlimited here, where core_pattern may write "core" in the
# cwd), a crash inside writes nothing: not into a bound host workspace, not to a host helper.
cws=$T_TMP/core-ws
mkdir -p "$cws"
chmod 755 "$cws"
give_to_user "$cws"
r=$T_TMP/core.json
out=$( (ulimit -c unlimited 2>/dev/null
	"$PADDOCK" run --timeout 60 --workspace "$cws" --report "$r" -- sh -c \
		'ulimit -c; ulimit -Hc; ulimit -c unlimited 2>/dev/null || echo refused
		 cd /workspace && exec '"$PY"' -c "import os; os.abort()"') </dev/null 2>&1)
expect_eq "core dumps are off inside, soft and hard, and cannot be raised" "0
0
refused" "$(printf '%s\n' "$out" | head -n 3)"
expect_eq "... a crash in the workspace wrote no core file on the host" "" "$(ls -A "$cws")"
expect_eq "... the crash is reported as SIGABRT" "signaled 6" \
	"$(jget "$r" reason) $(jget "$r" signal)"
expect_limit "$r" core 0 rlimit

# ---- accounting ---------------------------------------------------------------------------
# 200 MiB touched: the peak within 10% (plus a few MiB of the sandbox's own) - 190-235 MiB.
# Root it is the cgroup's peak, rootless the largest RSS; both must see the 200 MiB.
r=$T_TMP/acct-memory.json
run_sb out st "${probes[@]}" --timeout 60 --report "$r" -- /probe/memhog 200
expect_eq "memhog 200 runs to the end" 200 "$(printf '%s\n' "$out" | jget - allocated_mib)"
expect_range "... peak_memory_bytes is 190-235 MiB" $((190 * MiB)) $((235 * MiB)) \
	"$(jget "$r" peak_memory_bytes)"
expect_eq "... no OOM kills" 0 "$(jget "$r" oom_kills)"

r=$T_TMP/acct-cpu.json
run_sb out st "${probes[@]}" --timeout 60 --report "$r" -- /probe/cpuburn 1
expect_range "cpuburn 1: cpu_user_s + cpu_sys_s within 10% of 1.0" 0.9 1.1 "$(jcalc "$r" "$CPU")"

# ---- every report says how each limit was enforced -------------------------------------------
for f in "$T_TMP"/*.json; do
	bad=$("$PY" -c '
import json, sys
names = ["memory", "pids", "cpus", "cpu_time", "timeout", "disk", "file_size", "nofile", "output",
         "core", "disk_binds"]
by = {"cgroup-v1", "cgroup-v2", "rlimit", "tmpfs", "timer", "relay", "none"}
d = json.load(open(sys.argv[1]))
lim = d.get("limits")
if not isinstance(lim, dict):
    print("no limits object"); sys.exit(0)
for n in names:
    e = lim.get(n)
    if not isinstance(e, dict):
        print("%s: missing" % n); continue
    v = e.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        print("%s.value: %r" % (n, v))
    if e.get("enforced_by") not in by:
        print("%s.enforced_by: %r" % (n, e.get("enforced_by")))
for k in ["reason", "peak_memory_bytes", "oom_kills", "pids_peak", "output_truncated"]:
    if k not in d:
        print("%s: missing" % k)
' "$f" 2>&1)
	if [ -z "$bad" ]; then
		ok "report $(basename "$f") lists every limit with a value and enforced_by"
	else
		not_ok "report $(basename "$f") lists every limit with a value and enforced_by"
		diag "$bad"
	fi
done

finish
