#!/bin/bash
# --user root (docs/images.md): uid 0 of the sandbox's own user namespace, with a small set
# of capabilities over that namespace only. Every wall stays where it was: the escape probes
# of test-isolation.sh and test-syscalls.sh (which runs again as root inside:
# integration-syscalls-asroot-*) answer as they do for the sandbox user, init stays out of
# reach, and nothing the sandbox does reaches the host as anything but the invoker (rootless)
# or the owner of a bound directory (as root).
. "$(dirname "$0")/lib.sh"

R=(--user root)
run_sb out st "${R[@]}" -- sh -c 'id; echo "$HOME $USER"'
expect_eq "runs as uid 0, HOME=/root" "uid=0(root) gid=0(root) groups=0(root)
/root root" "$out"
run_sb out st "${R[@]}" -- grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status
expect_eq "capabilities: CHOWN DAC_OVERRIDE FOWNER KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT, and the walls" "CapInh:	0000000000000000
CapPrm:	00000000000405eb
CapEff:	00000000000405eb
CapBnd:	00000000000405eb
CapAmb:	0000000000000000
NoNewPrivs:	1
Seccomp:	2" "$out"
run_sb out st "${R[@]}" -- cat /proc/self/uid_map
if [ "$MODE" = root ]; then
	expect_match "as root: the sandbox's own range, never host root" \
		"^[[:space:]]+0[[:space:]]+(16[1-9][0-9]{7}|[2-3][0-9]{9})[[:space:]]+65536$" "$out"
else
	expect_match "rootless: the invoker is root inside, and nothing else exists" \
		"^[[:space:]]+0[[:space:]]+$(id -u)[[:space:]]+1$" "$out"
fi

# ---- init stays out of reach (uid 0 too as root, and as the invoker rootless) ----
run_sb out st "${R[@]}" -- sh -c '
cat /proc/1/mem 2>/dev/null | head -c1 | wc -c
cat /proc/1/environ 2>/dev/null | wc -c
readlink /proc/1/fd/0 /proc/1/root /proc/1/cwd 2>/dev/null | wc -l
kill -9 1; kill -STOP 1; kill -TERM 1; echo alive
python3 -c "import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))"
prlimit --pid 1 --nofile=16:16 2>/dev/null; grep "open files" /proc/1/limits | tr -s " " | cut -d" " -f4'
expect_eq "init: memory, environ, fds and root unreadable; signals ignored; no ptrace" "0
0
0
alive
-1" "$(echo "$out" | head -5)"
expect_no_match "...and no prlimit on it" "^16$" "$(echo "$out" | tail -1)"

# ---- the kernel's walls ----
run_sb out st "${R[@]}" -- sh -c '
mount -t tmpfs none /tmp 2>/dev/null; echo "mount=$?"
unshare -U true 2>/dev/null; echo "unshare=$?"
mknod /tmp/sda b 8 0 2>/dev/null; echo "mknod=$?"
touch /tmp/f && chmod u+s /tmp/f 2>/dev/null; echo "setuid=$?"
(echo x > /proc/sys/kernel/hostname) 2>/dev/null; echo "sysctl=$?"
python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" 2>/dev/null; echo "packet=$?"
python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)" 2>/dev/null; echo "raw=$?"
ls /sys 2>/dev/null | wc -l'
expect_eq "mount, unshare, device nodes, set-id bits, sysctls, raw and packet sockets: refused" "mount=32
unshare=1
mknod=1
setuid=1
sysctl=2
packet=1
raw=1
0" "$(echo "$out" | sed 's/^mount=[1-9][0-9]*$/mount=32/')"

canary="$T_TMP/canary-$$"
echo "host secret" >"$canary"
chmod 644 "$canary"
run_sb out st "${R[@]}" -- sh -c "cat $canary 2>&1; mkdir -p /tmp/c && chroot /tmp/c /bin/true 2>/dev/null; python3 -c '
import os
os.makedirs(\"/tmp/j\", exist_ok=True)
fd = os.open(\"/\", os.O_RDONLY)
os.chroot(\"/tmp/j\")
os.fchdir(fd)
for _ in range(20):
    os.chdir(\"..\")
os.chroot(\".\")
print(sorted(os.listdir(\"/\"))[:3], os.path.exists(\"$canary\"))'"
expect_match "host files stay invisible, even to a chroot escape" "No such file.*False" "$(echo $out)"

run_sb out st "${R[@]}" -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; ip link add d0 type dummy 2>/dev/null; echo "link=$?"'
expect_eq "network: lo only, and no new links (no NET_ADMIN)" "lo
link=2" "$(echo "$out" | sed 's/^link=[1-9]$/link=2/')"

# ---- what it writes ----
# On the host's /usr, the host's files belong to nobody inside: root inside cannot change
# them (capabilities act only on what its namespace maps), only add in the writable layer.
# An image's files are the sandbox's own (test-image.sh writes over them as root).
run_sb out st "${R[@]}" -- sh -c '(echo hi > /usr/bin/paddock-root-test) 2>/dev/null || echo refused
echo hi > /usr/local/paddock-root-test && cat /usr/local/paddock-root-test
(echo x > /etc/passwd) 2>/dev/null || echo refused'
expect_eq "root adds to /usr/local; the host's files and the synthesised /etc stay as they are" "refused
hi
refused" "$out"
[ ! -e /usr/bin/paddock-root-test ] && [ ! -e /usr/local/paddock-root-test ] &&
	ok "...and nothing reaches the host" || not_ok "a root write leaked to the host"
run_sb out st "${R[@]}" -- sh -c 'touch /tmp/o && chown 1234:1234 /tmp/o 2>&1; stat -c %u /tmp/o'
if [ "$MODE" = root ]; then
	expect_eq "chown to any id of the sandbox's range" "1234" "$out"
else
	expect_match "rootless: one id exists inside, chown to another fails" "Invalid argument" "$out"
fi
ws=$T_TMP/ws
mkdir -p "$ws"
give_to_user "$ws"
run_sb out st "${R[@]}" --workspace "$ws" -- sh -c 'echo w > /workspace/from-root; stat -c %u /workspace/from-root'
expect_eq "root writes the workspace, as its owner inside" "0" "$out"
expect_eq "...and on the host the file is the workspace owner's, never root's" \
	"$(stat -c %u "$ws")" "$(stat -c %u "$ws/from-root")"

# ---- the sandbox user is still the default ----
run_sb out st -- id -u
expect_eq "without --user root, uid 1000" "1000" "$out"

finish
