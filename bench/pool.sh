#!/bin/bash
# The warm pool, side by side in one run: create-from-pool + exec /bin/true + delete through
# the API ("lifecycle", paddockd --pool), the same on a paddockd without a pool ("cold"),
# exec in a live sandbox, bare fork+exec and a bubblewrap cold start, interleaved; then
# 2000 lifecycles in a row (first and last 200), and throughput with 1 and 2 clients.
#   bench/pool.sh [ROUNDS]        (default 300)
#   BUILD=dir: another build; POOL=N: pool size (8); N_SEQUENCE=N: the row's length (2000)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300}
build=${BUILD:-$top/build}
"$top/dev/deps" --bench
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" src/daemon/paddockd bench/api >/dev/null
ws=$(mktemp -d /tmp/pdbench.XXXXXX)
"$build/src/daemon/paddockd" --socket "$ws/pool.sock" --state-dir "$ws/p" --destroy-on-exit \
	--pool "${POOL:-8}" 2>"$ws/pool.log" &
p1=$!
"$build/src/daemon/paddockd" --socket "$ws/cold.sock" --state-dir "$ws/c" --destroy-on-exit \
	2>"$ws/cold.log" &
p2=$!
trap 'kill $p1 $p2 2>/dev/null; wait $p1 $p2 2>/dev/null; rm -rf "$ws"' EXIT
for s in pool cold; do
	for _ in $(seq 100); do [ -S "$ws/$s.sock" ] && break; sleep 0.05; done
done
sleep 1 # the pool fills
bwrap="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
bwrap+=" --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64"
bwrap+=" --proc /proc --dev /dev --tmpfs /tmp --bind $ws /workspace /bin/true"
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, interleaved, pool ${POOL:-8}"
# shellcheck disable=SC2086
COLD_SOCKET="$ws/cold.sock" "$build/bench/api" "$ws/pool.sock" "$rounds" $bwrap
SEQUENCE=${N_SEQUENCE:-2000} "$build/bench/api" "$ws/pool.sock" 0
for k in 1 2; do
	CLIENTS=$k "$build/bench/api" "$ws/pool.sock" 0
	CLIENTS=$k COLD_SOCKET="$ws/cold.sock" "$build/bench/api" "$ws/cold.sock" 0 | sed 's/^/cold: /'
done
start=$(date +%s.%N)
for _ in $(seq 100); do $bwrap >/dev/null; done
echo "bwrap: $(echo "100 / ($(date +%s.%N) - $start)" | bc -l | cut -c1-6) cold starts per second (one client)"
# the kernel's floor for throughput: new user, mount, network, pid, ipc, uts and cgroup
# namespaces and one process in them, nothing else (no root, no cgroup, no seccomp)
start=$(date +%s.%N)
for _ in $(seq 100); do unshare -Umnpiu -C --fork /bin/true; done
echo "floor: $(echo "100 / ($(date +%s.%N) - $start)" | bc -l | cut -c1-6) unshare -Umnpiu -C --fork /bin/true per second (one client)"
curl -s --unix-socket "$ws/pool.sock" http://x/metrics | grep -E '^paddock_pool_(hits|misses)_total|claim_seconds_(sum|count)'
