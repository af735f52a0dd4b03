#!/bin/bash
# Pause and resume latency (paddock_sandbox_pause/resume, docs/api.md), side by side with the
# kernel's floor in one run: the same freeze of a bare cgroup holding as many busy processes;
# then the same through paddockd's API (POST .../pause and .../resume on one kept-alive
# connection of its unix socket), printed on a second line.
#   bench/pause.sh [ROUNDS] [PROCS]     (default 200 rounds, 4 busy processes)
# As root the sandbox is frozen by the cgroup freezer; rootless by SIGSTOP from init (no
# floor then: a rootless user has no freezer to write).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-200}
procs=${2:-4}
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" bench/pause src/daemon/paddockd >/dev/null
floor=
if [ "$(id -u)" -eq 0 ]; then
	if [ -e /sys/fs/cgroup/freezer/freezer.state ] || [ -d /sys/fs/cgroup/freezer ]; then
		floor=/sys/fs/cgroup/freezer/paddock-bench-$$
	elif grep -qw cgroup2 /proc/mounts; then
		floor=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/paddock-bench-$$
	fi
	[ -n "$floor" ] && mkdir "$floor"
fi
ws=$(mktemp -d /tmp/pdbench.XXXXXX)
dpid=
cleanup() {
	[ -n "$floor" ] && rmdir "$floor" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -rf "$ws"
}
trap cleanup EXIT
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $rounds rounds, $procs busy processes"
"$top/build/bench/pause" "$rounds" "$procs" $floor
# through paddockd: the same sandbox work, plus HTTP, JSON and the store's transaction
"$top/build/src/daemon/paddockd" --socket "$ws/sock" --state-dir "$ws/st" --destroy-on-exit \
	2>"$ws/log" &
dpid=$!
for _ in $(seq 100); do [ -S "$ws/sock" ] && break; sleep 0.05; done
/usr/bin/python3 - "$ws/sock" "$rounds" "$procs" <<'PY'
import http.client, json, socket, sys, time

class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)

sock, rounds, procs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = Unix(sock)
def call(method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else None
sb = call("POST", "/v1/sandboxes", {"ttl_s": 3600})["id"]
for _ in range(procs):
    call("POST", f"/v1/sandboxes/{sb}/exec", {"cmd": "while :; do :; done", "background": True})
p, r = [], []
for _ in range(rounds):
    t = time.perf_counter(); call("POST", f"/v1/sandboxes/{sb}/pause"); p.append(time.perf_counter() - t)
    t = time.perf_counter(); call("POST", f"/v1/sandboxes/{sb}/resume"); r.append(time.perf_counter() - t)
call("DELETE", f"/v1/sandboxes/{sb}?wait=1")
q = lambda v, f: sorted(v)[min(len(v) - 1, int(f * len(v)))] * 1000
print(json.dumps({"api": "paddockd", "rounds": rounds, "procs": procs,
                  "pause_p50_ms": round(q(p, .5), 3), "pause_p99_ms": round(q(p, .99), 3),
                  "resume_p50_ms": round(q(r, .5), 3), "resume_p99_ms": round(q(r, .99), 3)}))
PY
