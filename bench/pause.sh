#!/bin/bash
# Pause and resume latency (paddock_sandbox_pause/resume, docs/api.md), side by side with the
# kernel's floor in one run: the same freeze of a bare cgroup holding as many busy processes.
#   bench/pause.sh [ROUNDS] [PROCS]     (default 200 rounds, 4 busy processes)
# As root the sandbox is frozen by the cgroup freezer; rootless by SIGSTOP from init (no
# floor then: a rootless user has no freezer to write).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-200}
procs=${2:-4}
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" bench/pause >/dev/null
floor=
if [ "$(id -u)" -eq 0 ]; then
	if [ -e /sys/fs/cgroup/freezer/freezer.state ] || [ -d /sys/fs/cgroup/freezer ]; then
		floor=/sys/fs/cgroup/freezer/paddock-bench-$$
	elif grep -qw cgroup2 /proc/mounts; then
		floor=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/paddock-bench-$$
	fi
	[ -n "$floor" ] && mkdir "$floor"
fi
trap '[ -n "$floor" ] && rmdir "$floor" 2>/dev/null || true' EXIT
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, $procs busy processes"
"$top/build/bench/pause" "$rounds" "$procs" $floor
