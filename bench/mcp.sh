#!/bin/bash
# paddock mcp over stdio, side by side in one run with bare fork+exec: the cost an agent pays
# per tool call. Measured from one client process (python3), interleaved round by round:
#   bare        fork+exec of /bin/true from the client
#   floor       unshare -Umnpiu -C --fork /bin/true: the kernel's floor for a sandbox
#   run_command tools/call run_command "true" in the session's live sandbox (JSON-RPC,
#               /bin/sh -c, the report) — what an agent calls most
#   read_file   tools/call read_file of a 4 KiB file
#   create      create_sandbox + run_command "true" + destroy_sandbox
#   bench/mcp.sh [ROUNDS]        (default 300)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300}
build=${BUILD:-$top/build}
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" src/cli/paddock >/dev/null
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, interleaved"
exec /usr/bin/python3 - "$build/src/cli/paddock" "$rounds" <<'PY'
import json, subprocess, sys, time

paddock, rounds = sys.argv[1], int(sys.argv[2])
p = subprocess.Popen([paddock, "mcp", "--max-sandboxes", "2"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, bufsize=1)
n = 0


def call(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    msg = json.loads(p.stdout.readline())
    if "error" in msg or msg["result"].get("isError"):
        sys.exit(f"bench/mcp.sh: {method} failed: {msg}")
    return msg["result"]


def tool(name, **args):
    return call("tools/call", {"name": name, "arguments": args}).get("structuredContent")


call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}})
tool("write_file", path="f", content="x" * 4096)  # makes the default sandbox too


def bare():
    subprocess.run(["/bin/true"], check=True)


def floor():
    # the kernel's floor for a sandbox: its namespaces and one process, nothing else
    subprocess.run(["unshare", "-Umnpiu", "-C", "--fork", "/bin/true"], check=True)


def run_command():
    tool("run_command", command="true")


def read_file():
    tool("read_file", path="f")


def create():
    sb = tool("create_sandbox")["sandbox_id"]
    tool("run_command", command="true", sandbox_id=sb)
    tool("destroy_sandbox", sandbox_id=sb)


cases = [("bare fork+exec", bare), ("floor (unshare)", floor), ("run_command true", run_command),
         ("read_file 4 KiB", read_file), ("create+run+destroy", create)]
times = {name: [] for name, _ in cases}
for f in (bare, floor, run_command, read_file, create):  # warm up
    f()
for _ in range(rounds):
    for name, f in cases:
        t0 = time.perf_counter()
        f()
        times[name].append(time.perf_counter() - t0)
p.stdin.close()
p.wait()


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


base = pct(times["bare fork+exec"], 0.5)
print(f"{'what':<22} {'p50 ms':>8} {'p99 ms':>8} {'p50/bare':>9}")
for name, _ in cases:
    print(f"{name:<22} {pct(times[name], 0.5) * 1e3:8.2f} {pct(times[name], 0.99) * 1e3:8.2f} "
          f"{pct(times[name], 0.5) / base:9.2f}")
PY
