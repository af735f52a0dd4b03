#!/bin/bash
# How many idle sandboxes fit on this machine: paddockd makes them (each with its own user,
# mount, pid, network, ipc, uts and cgroup namespaces, its root and its cgroup) and this
# reports, at each count, the memory per idle sandbox: the PSS of its processes (its init:
# the only one) plus the growth of the kernel's slab, page tables and kernel stacks
# (/proc/meminfo), the tmpfs it holds (Shmem), and paddockd's own memory per live sandbox.
# paddockd holds 8 fds per sandbox; where root cannot raise RLIMIT_NOFILE (no
# CAP_SYS_RESOURCE: this VM caps it at 20000), the sandboxes are spread over several
# paddockd, PER_DAEMON each (default: what the hard limit allows, at 9 fds a sandbox).
#   bench/density.sh [COUNTS]      (default "1000 5000"; as root)   BUILD=dir
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
counts=${1:-1000 5000}
build=${BUILD:-$top/build}
[ "$(id -u)" -eq 0 ] || { echo "bench/density.sh: run as root (tenants over TCP, many uid ranges)" >&2; exit 2; }
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" src/daemon/paddockd src/cli/paddock >/dev/null
ws=$(mktemp -d /tmp/pdbench.XXXXXX)
max=0
for c in $counts; do [ "$c" -gt "$max" ] && max=$c; done
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=1048576
per=${PER_DAEMON:-$(((hard - 200) / 9))}
# a tenant holds at most 1024 sandboxes (docs/api.md): one tenant per thousand a paddockd holds
tenants=$(((per + 999) / 1000))
: >"$ws/tokens"
for i in $(seq "$tenants"); do echo "t$i token-for-density-$i-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' ')" >>"$ws/tokens"; done
chmod 600 "$ws/tokens"
daemons=$(( (max + per - 1) / per ))
port=$((20000 + RANDOM % 20000))
sync
echo 3 >/proc/sys/vm/drop_caches
pids=()
for k in $(seq 0 $((daemons - 1))); do
	"$build/src/daemon/paddockd" --socket "$ws/sock$k" --state-dir "$ws/st$k" \
		--listen "127.0.0.1:$((port + k))" --tokens "$ws/tokens" --destroy-on-exit 2>"$ws/log$k" &
	pids+=($!)
done
cleanup() {
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	"$build/src/cli/paddock" gc >/dev/null 2>&1 || true
	rm -rf "$ws"
}
trap cleanup EXIT
for k in $(seq 0 $((daemons - 1))); do
	for _ in $(seq 100); do [ -S "$ws/sock$k" ] && break; sleep 0.05; done
done
echo "# $(uname -r), $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), idle sandboxes made by paddockd"
/usr/bin/python3 - "$port" "$ws/tokens" "$per" "${pids[*]}" $counts <<'PY'
import http.client, json, os, sys, time

port, tokens, per = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pds = [int(p) for p in sys.argv[4].split()]
counts = [int(c) for c in sys.argv[5:]]
toks = [l.split()[1] for l in open(tokens) if l.strip()]


def meminfo():
    m = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":")
        m[k] = int(v.split()[0])  # kB
    return m


def pss(pid):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def uss(pid):
    """resident memory of paddockd, kB: its growth is what it keeps per sandbox (its private
    pages alone shrink as the inits it forks come to share them)"""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def inits():
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open(f"/proc/{p}/comm").read().strip() == "paddock-init":
                    out.append(int(p))
            except OSError:
                pass
    return out


conns = {}
base, base_pd = meminfo(), sum(uss(p) for p in pds)
made = 0
t0 = time.time()
print(f"{'sandboxes':>9} {'init PSS':>9} {'slab':>8} {'pagetbl':>8} {'kstack':>8} {'shmem':>8} "
      f"{'per sandbox':>11} {'paddockd':>9} {'MemAvail drop':>13}  (kB per sandbox)")
for target in counts:
    while made < target:
        k, i = made // per, (made % per) // 1000  # the daemon, and the tenant there
        c = conns.get((k, i))
        if not c:
            c = conns[(k, i)] = http.client.HTTPConnection("127.0.0.1", port + k, timeout=60)
        c.request("POST", "/v1/sandboxes", body=json.dumps({"ttl_s": 3600}),
                  headers={"Authorization": f"Bearer {toks[i]}", "Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        if r.status != 201:
            sys.exit(f"create {made} failed: {r.status} {body[:300]!r}")
        made += 1
    time.sleep(2)  # let lazily freed memory settle
    now = meminfo()
    ps = inits()
    init_pss = sum(pss(p) for p in ps) / made
    d = {k: (now[k] - base[k]) / made for k in ("Slab", "PageTables", "KernelStack", "Shmem")}
    total = init_pss + d["Slab"] + d["PageTables"] + d["KernelStack"]
    print(f"{made:>9} {init_pss:>9.1f} {d['Slab']:>8.1f} {d['PageTables']:>8.1f} "
          f"{d['KernelStack']:>8.1f} {d['Shmem']:>8.1f} {total:>11.1f} "
          f"{(sum(uss(p) for p in pds) - base_pd) / made:>9.1f} {(base['MemAvailable'] - now['MemAvailable']) / made:>13.1f}"
          f"   ({len(ps)} inits, {time.time() - t0:.0f} s)")
# What a new memory cgroup costs now in shrinker tables: the kernel sizes each one by the most
# superblocks (shrinkers) ever registered at once, 520 bytes (kmalloc-1k) per 64 (rootfs.c)
def kmalloc_1k():
    for line in open("/proc/slabinfo"):
        if line.startswith("kmalloc-1k "):
            return int(line.split()[1])
    return 0


memroot = "/sys/fs/cgroup/memory" if os.path.isdir("/sys/fs/cgroup/memory") else "/sys/fs/cgroup"
probe = f"{memroot}/paddock-density-probe-{os.getpid()}"
try:
    before = kmalloc_1k()
    os.mkdir(probe)
    for i in range(20):
        os.mkdir(f"{probe}/{i}")
    per = (kmalloc_1k() - before) / 21
    for i in range(20):
        os.rmdir(f"{probe}/{i}")
    os.rmdir(probe)
    print(f"a new memory cgroup now takes ~{per:.0f} kB of kmalloc-1k (its shrinker table: "
          f"~{per * 64:.0f} shrinkers, the most superblocks ever registered at once)")
except OSError as e:
    print(f"(memory cgroup probe skipped: {e})")
print("per sandbox = init PSS + slab + page tables + kernel stack (the issue's measure);")
print("shmem: each sandbox's tmpfs (its /etc, /tmp, home, workspace, /usr layer);")
print("paddockd: the growth of its resident memory per live sandbox")
print("MemAvail drop: everything, page cache included, as the kernel accounts it")
PY
