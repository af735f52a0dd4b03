#!/bin/bash
# Start-up cost, side by side in one run: create a sandbox, run /bin/true, tear it down.
#   bench/startup.sh [ROUNDS]        (default 300)
# Compares bare fork+exec, bubblewrap (the line in shared/reference/peers.md, own netns) and
# `paddock run`, interleaved, and prints p50/p90 and each p50 as a multiple of bare.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300}
"$top/dev/deps" --bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/cli/paddock bench/spawn >/dev/null
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
bwrap="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
bwrap+=" --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64"
bwrap+=" --proc /proc --dev /dev --tmpfs /tmp --bind $ws /workspace /bin/true"
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, interleaved"
"$top/build/bench/spawn" "$rounds" \
	"bare=/bin/true" \
	"bwrap=$bwrap" \
	"paddock=$top/build/src/cli/paddock run -- /bin/true"
