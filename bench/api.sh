#!/bin/bash
# paddockd through its API, side by side in one run with bare fork+exec, the kernel's floor
# (unshare -Umnpiu -C --fork) and a bubblewrap cold start: exec in a live sandbox, POST /v1/run
# (create + exec + delete in one request) and create + exec + delete in three.
#   bench/api.sh [ROUNDS]        (default 300)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300}
"$top/dev/deps" --bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/daemon/paddockd bench/api >/dev/null
ws=$(mktemp -d /tmp/pdbench.XXXXXX)
"$top/build/src/daemon/paddockd" --socket "$ws/sock" --state-dir "$ws/st" --destroy-on-exit \
	2>"$ws/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$ws"' EXIT
for _ in $(seq 100); do [ -S "$ws/sock" ] && break; sleep 0.05; done
bwrap="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
bwrap+=" --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64"
bwrap+=" --proc /proc --dev /dev --tmpfs /tmp --bind $ws /workspace /bin/true"
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, interleaved"
# shellcheck disable=SC2086
"$top/build/bench/api" "$ws/sock" "$rounds" $bwrap
