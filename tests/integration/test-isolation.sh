#!/bin/bash
# The defaults of `paddock run`: identity, privileges, namespaces, what is visible.
. "$(dirname "$0")/lib.sh"

run_sb out st -- id
expect_eq "exit status of id" 0 "$st"
expect_eq "runs as uid/gid 1000 (user)" "uid=1000(user) gid=1000(user) groups=1000(user)" "$out"

run_sb out st -- sh -c 'echo "$HOME $USER $(pwd)"; hostname; cat /etc/hostname'
expect_eq "home, user, cwd, hostname" "/home/user user /workspace
sandbox
sandbox" "$out"

run_sb out st --hostname box-1 -- hostname
expect_eq "--hostname sets the hostname" "box-1" "$out"

status=$("$PADDOCK" run -- cat /proc/self/status)
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
	expect_match "$f is empty" "$f:[[:space:]]+0000000000000000" "$status"
done
expect_match "no_new_privs is set" "NoNewPrivs:[[:space:]]+1" "$status"
expect_match "seccomp filter mode" "Seccomp:[[:space:]]+2" "$status"

# init is the small init image, not a copy of paddock: it crossed its exec keeping its
# capabilities as ambient ones, and cleared them; it is not dumpable (an exec makes a process
# dumpable again), so nothing inside reads its memory, rootless not even with init's own uid
status=$("$PADDOCK" run -- cat /proc/1/status)
expect_match "init holds no ambient capability" "CapAmb:[[:space:]]+0000000000000000" "$status"
expect_match "...and no inheritable one" "CapInh:[[:space:]]+0000000000000000" "$status"
run_sb out st -- sh -c 'cat /proc/1/maps >/dev/null && echo readable; cat /proc/1/environ >/dev/null && echo readable; echo done'
expect_eq "init is not dumpable: its maps and environ are closed to commands" \
	"cat: /proc/1/maps: Permission denied
cat: /proc/1/environ: Permission denied
done" "$out"
if [ "$MODE" = rootless ]; then
	# commands share init's uid: only init's being non-dumpable hands its /proc files to root,
	# which a rootless sandbox does not map (65534)
	run_sb out st -- stat -c %u /proc/1/environ
	expect_eq "init is not dumpable: its /proc files are not its uid's" "65534" "$out"
fi
if [ "$MODE" = root ]; then
	# (rootless, the invoker owns the sandbox's user namespace and may look: not a boundary)
	"$PADDOCK" run -- sleep 30 </dev/null >/dev/null 2>&1 &
	RUN=$!
	INIT=
	for _ in $(seq 100); do
		INIT=$(ps -e -o pid=,ppid=,comm= | awk -v p="$RUN" '$2 == p && $3 == "paddock-init" { print $1 }')
		# its command runs: init is past its exec and its setup
		[ -n "$INIT" ] && ps -e -o ppid=,comm= | awk -v p="$INIT" '$1 == p && $2 == "sleep" { f = 1 } END { exit !f }' && break
		sleep 0.05
	done
	expect_eq "init runs the init image from its sealed memfd, mapping no library" \
		"/memfd:paddock-init (deleted) 0" \
		"$(readlink "/proc/$INIT/exe") $(grep -c '\.so' "/proc/$INIT/maps")"
	kill "$RUN"
	wait "$RUN" 2>/dev/null
fi

run_sb out st -- cat /proc/self/uid_map
if [ "$MODE" = root ]; then
	expect_match "root mode maps a private range, never host root" \
		"^[[:space:]]+0[[:space:]]+1[0-9]{9}[[:space:]]+65536$" "$out"
else
	expect_match "rootless maps 1000 to the invoker only" \
		"^[[:space:]]+1000[[:space:]]+$(id -u)[[:space:]]+1$" "$out"
fi

# ---- the sandbox sees itself, not the host ----
# free, nproc, Python's os.cpu_count() and /proc/cpuinfo agree with the limits; uptime and
# boot id are the sandbox's; no host kernel command line, disks or swap.
VIEW='echo $(free -b | awk "/^Mem:/ { print \$2 }") $(nproc) $(python3 -c "import os; print(os.cpu_count())") $(grep -c ^processor /proc/cpuinfo)'
run_sb out st --memory 300M --cpus 1 -- sh -c "$VIEW"
expect_eq "--memory 300M --cpus 1: free's total, nproc, os.cpu_count(), cpuinfo" \
	"314572800 1 1 1" "$out"
host_cpus=$(nproc)
run_sb out st --cpus "$host_cpus" -- sh -c "$VIEW"
expect_match "...all of the host's CPUs when the quota is all of them" " $host_cpus $host_cpus $host_cpus$" "$out"
run_sb out st -- sh -c 'sleep 1; cut -d. -f1 /proc/uptime; ps -o etimes= -p 1 2>/dev/null || echo 0'
up=$(head -n 1 <<<"$out")
expect_eq "uptime counts from the sandbox's start, not the host's (<= 3 s after 1 s)" 1 \
	"$(( up >= 1 && up <= 3 ))"
expect_eq "...and no process seems to have started before it (init's elapsed time)" 1 \
	"$(( $(tail -n 1 <<<"$out") <= up + 1 ))"
run_sb out st -- sh -c 'cat /proc/sys/kernel/random/boot_id; cat /proc/cmdline | wc -c; grep -vc "^major\|^$" /proc/partitions; wc -c </proc/diskstats; grep -vc ^Filename /proc/swaps'
b1=$(head -n 1 <<<"$out")
expect_eq "the kernel command line is not the host's, nor disks, partitions or swap" "1 0 0 0" \
	"$(tail -n +2 <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
run_sb out st -- cat /proc/sys/kernel/random/boot_id
expect_eq "each sandbox has a boot id of its own, not the host's" "3 3" \
	"$(printf '%s\n' "$b1" "$out" /proc/sys/kernel/random/boot_id | sed "s|^/.*|$(cat /proc/sys/kernel/random/boot_id)|" | sort -u | wc -l) $(grep -cE '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' <<<"$b1
$out
$(cat /proc/sys/kernel/random/boot_id)")"
run_sb out st -- sh -c 'touch /proc/meminfo 2>/dev/null || echo ro; grep -c "/proc/meminfo " /proc/self/mountinfo'
expect_eq "the view is read-only" "ro
1" "$out"

# As root, where the host runs LXCFS (here: one the test starts, in a mount namespace of its
# own), memory, load, disks and swap are its live files, from the sandbox's own cgroup.
if [ "$MODE" = root ]; then
	if command -v lxcfs >/dev/null && [ -c /dev/fuse ]; then
		mkdir -p "$T_TMP/lxcfs"
		cat >"$T_TMP/inside.sh" <<'SH'
free -b | awk '/^Mem:/ { print $2, $3 + $6 }'
head -c 50000000 /dev/zero >/tmp/f
free -b | awk '/^Mem:/ { print $2, $3 + $6 }'
awk '$5 == "/proc/meminfo" { for (i = 7; $i != "-"; i++); print $(i + 1) }' /proc/self/mountinfo
SH
		cat >"$T_TMP/with-lxcfs.sh" <<'SH'
lxcfs -f -l -p "$1/lxcfs.pid" "$1/lxcfs" >"$1/lxcfs.log" 2>&1 &
l=$!
for _ in $(seq 100); do [ -e "$1/lxcfs/proc/meminfo" ] && break; sleep 0.05; done
"$2" run --memory 300M --ro-bind "$1/inside.sh:/inside.sh" -- sh /inside.sh </dev/null 2>&1
kill -9 $l
wait $l 2>/dev/null
umount -l "$1/lxcfs" 2>/dev/null
true
SH
		chmod 644 "$T_TMP/inside.sh"
		out=$(unshare -m --propagation private sh "$T_TMP/with-lxcfs.sh" "$T_TMP" "$PADDOCK")
		total=$(head -n 1 <<<"$out" | cut -d' ' -f1)
		used=$(( $(sed -n 2p <<<"$out" | cut -d' ' -f2) - $(head -n 1 <<<"$out" | cut -d' ' -f2) ))
		expect_eq "with LXCFS: /proc/meminfo is its live file" "fuse.lxcfs" "$(tail -n 1 <<<"$out")"
		expect_eq "...free's total is the memory limit" 314572800 "$total"
		expect_eq "...and used follows what the sandbox holds (+50 MB in its /tmp)" 1 \
			"$(( used >= 45000000 && used < 100000000 ))"
	else
		unavailable "lxcfs and /dev/fuse are needed (dev/deps --test installs lxcfs)"
	fi
fi

# Root of a user namespace of its own (unshare -r, as in some CI runners and nested
# containers) is not root of the host: paddock runs rootless there, and works.
out=$(unshare -r "$PADDOCK" run -- sh -c 'id -u; cat /proc/self/uid_map' </dev/null 2>&1)
expect_match "root of an unprivileged user namespace runs rootless: 1000 maps to its uid 0" \
	"^1000
[[:space:]]+1000[[:space:]]+0[[:space:]]+1$" "$out"

# A command cannot weaken its own init: rootless they share a uid, and the kernel alone would
# let `prlimit --pid 1` cut init's limits so that no later command could start.
run_sb out st -- sh -c 'prlimit --pid 1 --nofile=16:16 --nproc=1:1; echo "prlimit=$?"'
expect_match "prlimit on init is refused" "prlimit=1" "$out"
run_sb out st -- sh -c 'prlimit --pid 1 --nofile=16:16 2>/dev/null; grep "open files" /proc/1/limits'
expect_no_match "...and init keeps its limits" "[[:space:]]16[[:space:]]+16[[:space:]]" "$out"

if [ "$MODE" = root ]; then
	# id ranges past the first 4096 (there are 32768): another process holds slots 0..4199
	coproc HOLD { /usr/bin/python3 -c '
import fcntl, os, sys
held = []
os.makedirs("/run/paddock/idmap", mode=0o700, exist_ok=True)
for i in range(4200):
    fd = os.open(f"/run/paddock/idmap/{i}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass
    held.append(fd)
print("held", flush=True)
sys.stdin.read()'; }
	read -r _ <&"${HOLD[0]}"
	run_sb out st -- cat /proc/self/uid_map
	start=$(awk '{ print $2 }' <<<"$out")
	expect_eq "with 4200 id ranges held elsewhere, a sandbox gets one past them" \
		"1 0" "$((start >= 0x60000000 + 4200 * 65536)) $st"
	run_sb out st -- cat /proc/self/uid_map
	expect_eq "...and so does the next (32768 ranges in all)" \
		"1" "$(($(awk '{ print $2 }' <<<"$out") >= 0x60000000 + 4200 * 65536))"
	exec {HOLD[1]}>&-
	wait "$HOLD_PID"
fi

run_sb out st -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
expect_eq "only lo in the network namespace" "lo" "$out"
run_sb out st -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b"ping"); print(a.recv(4).decode())
try:
    socket.create_connection(("10.255.255.1", 80), timeout=2); print("reached")
except OSError as e:
    print("unreachable", e.errno)'
expect_match "loopback works, nothing else is routable" "^ping
unreachable (101|113)$" "$out"

run_sb out st -- sh -c 'ls /proc | grep -E "^[0-9]+$" | sort -n | tr "\n" " "'
expect_match "ps sees only sandbox processes (pid 1 is init)" "^1 [0-9]+ [0-9]+ [0-9 ]*$" "$out"
count=$(echo "$out" | wc -w)
[ "$count" -le 6 ] && ok "few pids visible ($count)" || not_ok "few pids visible: $out"

run_sb out st -- sh -c 'kill -9 1 2>/dev/null; kill -TERM 1 2>/dev/null; echo alive'
expect_eq "init cannot be killed from inside" "alive" "$out"

canary="$T_TMP/canary-$$"
echo "host secret" >"$canary"
chmod 644 "$canary"
run_sb out st -- cat "$canary"
expect_match "host canary file is not visible" "No such file" "$out"
run_sb out st -- sh -c 'ls /etc/shadow /etc/gshadow /etc/ssh 2>&1; grep -c . /etc/passwd'
expect_match "no shadow, no ssh keys" "No such file.*No such file.*No such file" "$out"
expect_match "passwd is synthesised (3 entries)" "3$" "$out"
run_sb out st -- sh -c 'ls /etc/nsswitch.conf /etc/resolv.conf /etc/hosts /etc/group; grep ^hosts: /etc/nsswitch.conf'
expect_match "the synthesised /etc has nsswitch.conf, resolv.conf, hosts and group" \
	"^/etc/group /etc/hosts /etc/nsswitch.conf /etc/resolv.conf hosts: files dns$" "$(echo $out)"
run_sb out st -- sh -c 'cat /proc/kcore /proc/keys /proc/timer_list 2>/dev/null | wc -c'
expect_eq "sensitive /proc files are masked" "0" "$out"
run_sb out st -- sh -c 'for d in /proc/acpi /proc/driver; do [ -d "$d" ] || continue; ls -A "$d" | wc -l; touch "$d/x" 2>/dev/null && echo "wrote $d"; done | sort -u'
expect_eq "/proc/acpi and /proc/driver are masked: empty, read-only" "0" "$out"
# Density: a sandbox's own filesystems are its disk, the /usr overlay, devpts and proc;
# every superblock grows each memory cgroup's shrinker table (rootfs.c, build_dev()).
run_sb out st -- awk '{ print $3 }' /proc/self/mountinfo
own=$(comm -23 <(sort -u <<<"$out") <(awk '{ print $3 }' /proc/self/mountinfo | sort -u) | wc -l)
expect_eq "four filesystems of its own (disk, /usr overlay, devpts, proc), no more" "4" "$own"

run_sb out st -- sh -c '
for p in / /etc /usr/bin /proc/sys/kernel/hostname /dev /sys; do
	if (echo x > "$p/paddock-probe") 2>/dev/null; then echo "wrote $p"; fi
done
for p in /tmp /workspace /home/user /usr/local /dev/shm; do
	(echo x > "$p/probe") 2>/dev/null && echo "ok $p"
done'
expect_eq "writable exactly where the sandbox may write" "ok /tmp
ok /workspace
ok /home/user
ok /usr/local
ok /dev/shm" "$out"

run_sb out st -- sh -c 'mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>&1; echo "mount=$?"; unshare -r true 2>&1; echo "unshare=$?"'
expect_match "mount fails" "mount=[1-9]" "$out"
expect_match "unshare fails" "unshare=[1-9]" "$out"

export PADDOCK_LEAK_CANARY=should-not-leak
run_sb out st --env FOO=bar -- env
expect_no_match "caller environment does not leak in" "PADDOCK_LEAK_CANARY" "$out"
expect_match "--env is set" "(^|
)FOO=bar(
|$)" "$out"
names=$(echo "$out" | cut -d= -f1 | sort | tr '\n' ' ')
expect_eq "environment is built from nothing" "FOO HOME LANG LOGNAME PATH SHELL USER " "$names"

run_sb out st -- python3 -c 'print(sum(range(10)))'
expect_eq "python3 from the host works" "45" "$out"

run_sb out st -- sh -c 'echo hi > /usr/local/new && cat /usr/local/new'
expect_eq "writes to /usr/local work" "hi" "$out"
[ ! -e /usr/local/new ] && ok "... and never reach the host" || not_ok "/usr/local/new leaked to host"

finish
