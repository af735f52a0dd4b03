#!/bin/bash
# What the code interpreter costs (docs/code.md), side by side in one run:
#   bench/code.sh [RUNS]        (default 5; each row is the median)
# - bare `python3 -c pass` and a bare Jupyter kernel's first run (jupyter_client on the host,
#   no sandbox): the floors;
# - the first run in a new sandbox, cold: paddockd starts the interpreter and its kernel then;
# - the first run in a sandbox from paddockd's warm pool (--pool): the claim, then the
#   interpreter's start as in a cold sandbox (a pooled sandbox runs no command before its
#   claim, so no kernel can wait there: docs/code.md);
# - a trivial run in a warm context (the kernel has run before).
# Times are wall clock from the request to the answer's end, through paddockd's unix socket.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
"$top/dev/deps" --code
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/daemon/paddockd >/dev/null
tmp=$(mktemp -d /tmp/pdbench.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
now() { date +%s.%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
api() { curl -s --max-time 120 --unix-socket "$tmp/sock" "$@"; }
daemon() {
	[ -n "$pid" ] && kill "$pid" && wait "$pid" 2>/dev/null
	"$top/build/src/daemon/paddockd" --socket "$tmp/sock" --state-dir "$tmp/state" "$@" \
		>"$tmp/log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -S "$tmp/sock" ] && api http://x/v1/sandboxes >/dev/null && return; sleep 0.05; done
	echo "bench/code.sh: paddockd did not start" >&2; cat "$tmp/log" >&2; exit 1
}
new_box() { api -X POST http://x/v1/sandboxes -d '{}' | sed -n 's/.*"id":"\(sb_[a-z0-9]*\)".*/\1/p'; }
run_code() { # ID CODE: ms from the request to the end of the answer
	local t0 t1
	t0=$(now)
	api -X POST "http://x/v1/sandboxes/$1/code/execute" -d "{\"code\":\"$2\"}" | grep -q end_of_execution ||
		{ echo "bench/code.sh: the run in $1 failed" >&2; exit 1; }
	t1=$(now)
	ms "$t0" "$t1"
}
first_runs() { # what a new sandbox's first run costs, $runs times
	for _ in $(seq "$runs"); do
		id=$(new_box)
		run_code "$id" "1"
		api -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
	done | median
}

echo "# $(uname -r), $(nproc) cores, uid $(id -u), $(/usr/bin/python3 --version), median of $runs"
bare_py=$(for _ in $(seq "$runs"); do t0=$(now); /usr/bin/python3 -c pass; t1=$(now); ms "$t0" "$t1"; done | median)
# the kernel as the interpreter starts it; the time is taken when the first run's answer is in
bare_kernel=$(for _ in $(seq "$runs"); do t0=$(now); t1=$(/usr/bin/python3 -c '
import time
from jupyter_client import KernelManager
km = KernelManager(kernel_name="python3")
km.start_kernel(extra_arguments=["--IPKernelApp.matplotlib=inline", "--HistoryManager.enabled=False"])
kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)
kc.execute_interactive("1", timeout=60, output_hook=lambda m: None)
print(time.time(), flush=True)
km.shutdown_kernel(now=True)
' 2>/dev/null | head -1); ms "$t0" "$t1"; done | median)

daemon
cold=$(first_runs)
id=$(new_box)
run_code "$id" "1" >/dev/null
warm=$(for _ in $(seq $((runs * 4))); do run_code "$id" "x = 1"; done | median)
api -X DELETE "http://x/v1/sandboxes/$id" >/dev/null

daemon --pool 2
sleep 3 # the pool fills
pooled=$(for _ in $(seq "$runs"); do
	id=$(new_box)
	run_code "$id" "1"
	api -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
	sleep 2 # the pool refills
done | median)

printf '%-58s %10s %9s\n' "what" "ms" "x python3"
row() { printf '%-58s %10.1f %9.1f\n' "$1" "$2" "$(awk -v a="$2" -v b="$bare_py" 'BEGIN { print a / b }')"; }
row "bare python3 -c pass" "$bare_py"
row "bare Jupyter kernel: start and first run (no sandbox)" "$bare_kernel"
row "first run in a new sandbox, cold (server and kernel start)" "$cold"
row "first run in a pooled sandbox (claim + interpreter start)" "$pooled"
row "a trivial run in a warm context" "$warm"
