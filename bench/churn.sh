#!/bin/bash
# Sustained use: many sandboxes with limits, one after another, as an agent host runs them.
#   bench/churn.sh [RUNS]        (default 2000; the windows compared are 200 runs each)
# Runs `paddock run --memory 256M --pids 256 -- /bin/true` RUNS times in a row and compares
# the p50 of the first 200 runs with that of the last 200: a ratio well above 1 means
# something piles up per sandbox (cgroups, mounts, ids). Then it counts the cgroup
# directories paddock keeps (paddock/<slot> below each hierarchy, reused: docs/spec.md) and
# the memory cgroups the kernel still holds, removed ones included (/proc/cgroups), before
# and after. As root, on cgroup v1 or v2; rootless there are no cgroups to count.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-2000}
window=200
"$top/dev/deps" --bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/cli/paddock bench/churn >/dev/null

# directories below paddock/ in the memory hierarchy (v1), or below paddock/ on v2
paddock_cgroups() {
	local d
	for d in /sys/fs/cgroup/memory/paddock /sys/fs/cgroup/paddock /sys/fs/cgroup/unified/paddock; do
		if [ -d "$d" ]; then
			find "$d" -mindepth 1 -type d | wc -l
			return
		fi
	done
	echo 0
}
# the kernel's count of memory cgroups, those removed but not yet freed included
kernel_memcgs() {
	awk '$1 == "memory" { print $3; found = 1 } END { if (!found) print "-" }' /proc/cgroups
}

before_dirs=$(paddock_cgroups)
before_kernel=$(kernel_memcgs)
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $runs runs in a row:" \
	"paddock run --memory 256M --pids 256 -- /bin/true"
status=0
"$top/build/bench/churn" "$runs" "$window" \
	"$top/build/src/cli/paddock" run --memory 256M --pids 256 -- /bin/true || status=$?
printf '%-20s %10s %10s\n' "cgroups" "before" "after"
printf '%-20s %10s %10s\n' "paddock/ dirs" "$before_dirs" "$(paddock_cgroups)"
printf '%-20s %10s %10s\n' "kernel memcgs" "$before_kernel" "$(kernel_memcgs)"
exit $status
