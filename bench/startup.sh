#!/bin/bash
# Start-up cost, side by side in one run: create a sandbox, run a command, tear it down.
#   bench/startup.sh [ROUNDS]        (default 300; the Python table runs ROUNDS/3)
# Interleaved, with the machine's own baselines printed beside (compare machines by ratios):
#   bare       fork+exec of the command, no sandbox
#   floor      unshare -Umnpiu -C --fork: the kernel's floor, new user, mount, pid, net,
#              ipc, uts and cgroup namespaces and one process in them, nothing else
#   bwrap      bubblewrap, the line in shared/reference/peers.md (own network namespace)
#   version    paddock --version: paddock's own start, no sandbox
#   paddock    paddock run, every isolation layer and the default limits on
# Then the same as an unprivileged uid (PADDOCK_BENCH_UID, default 4242) when run as root,
# and a first `python3 -c pass` in a fresh sandbox. Prints p50/p90 and each p50 as a
# multiple of bare and of bwrap.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300}
"$top/dev/deps" --bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/cli/paddock bench/spawn >/dev/null
P=$top/build/src/cli/paddock
bwrap="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
bwrap+=" --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64"
bwrap+=" --proc /proc --dev /dev --tmpfs /tmp"
floor="unshare -Umnpiu -C --fork"
spawn=("$top/build/bench/spawn")
table() { # ROUNDS COMMAND...
	local n=$1
	shift
	"${spawn[@]}" "$n" \
		"bare=$*" \
		"floor=$floor $*" \
		"bwrap=$bwrap $*" \
		"version=$P --version" \
		"paddock=$P run -- $*"
}
echo "# $(uname -r), $(nproc) cores, $(id -un) (uid $(id -u)), $rounds rounds, interleaved"
echo "## /bin/true, as uid $(id -u)"
table "$rounds" /bin/true
if [ "$(id -u)" -eq 0 ]; then
	uid=${PADDOCK_BENCH_UID:-4242}
	echo "## /bin/true, rootless (uid $uid)"
	spawn=(setpriv --reuid="$uid" --regid="$uid" --clear-groups "$top/build/bench/spawn")
	table "$rounds" /bin/true
	spawn=("$top/build/bench/spawn")
fi
echo "## the first python3 -c pass in a fresh sandbox, as uid $(id -u)"
table "$((rounds / 3))" /usr/bin/python3 -c pass
