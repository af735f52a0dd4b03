#!/bin/bash
# The official E2B SDK (tests/integration/e2b's pinned copy) driving paddockd --e2b, side by
# side with bare fork+exec and the kernel's floor (unshare -Umnpiu -C --fork) from the same
# node process: commands.run("true") in a live sandbox, files.read/write of 4 KiB, and
# Sandbox.create + run + kill.
#   bench/e2b.sh [ROUNDS]        (default 200; BUILD=dir another build directory; POOL=N a
#                                warm pool of N sandboxes)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-200}
build=${BUILD:-$top/build}
sdk=$top/tests/integration/e2b
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" src/daemon/paddockd >/dev/null
[ -d "$sdk/node_modules/e2b" ] || (cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
tmp=$(mktemp -d /tmp/pd-bench-e2b.XXXXXX)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/src/daemon/paddockd" --socket "$tmp/sock" --state-dir "$tmp/st" --destroy-on-exit ${POOL:+--pool "$POOL"} \
	--e2b 127.0.0.1:0 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do grep -q "e2b on" "$tmp/log" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/.*e2b on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
[ -n "$port" ] || { cat "$tmp/log" >&2; exit 1; }
# the script beside the SDK, so `import 'e2b'` resolves to the pinned copy
cp "$top/bench/e2b.mjs" "$sdk/.bench-e2b.mjs"
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp" "$sdk/.bench-e2b.mjs"' EXIT
echo "# $(uname -r), $(nproc) cores, uid $(id -u), node $(node --version), $rounds rounds, interleaved"
E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_DOMAIN=localhost:$port \
	E2B_API_KEY=bench node "$sdk/.bench-e2b.mjs" "$rounds"
