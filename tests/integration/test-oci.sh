#!/bin/bash
# paddock-oci, the OCI runtime (docs/oci.md): the runc command line on a bundle made here,
# then real engines from Debian's packages driving it (Podman, containerd's ctr through the
# runc v2 shim, Docker with a runtimes entry), with images made from this machine's own
# files. The container runs as a paddock sandbox (own user namespace and id range, seccomp,
# no_new_privs, paddock's init as PID 1); bad config.json fields are refused by name; and
# nothing is left after delete, delete --force of a running container, or a SIGKILLed
# supervisor (run.sh checks processes, mounts and temp files after the test).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/oci-lib.sh"
cleanup() {
	[ -n "${DOCKER+x}" ] && "${DOCKER[@]}" rm -f $("${DOCKER[@]}" ps -aq) >/dev/null 2>&1
	stop_engines
	podman_cleanup
	[ "${made_run_root:-0}" = 1 ] && rmdir /run/paddock-oci 2>/dev/null
	rm -rf "$T_TMP"
}
podman_cleanup() { :; }
trap cleanup EXIT

oci_image "$T_TMP/img" curl || { not_ok "make a root"; finish; }
give_to_user "$T_TMP/img"

# ---- the runtime alone --------------------------------------------------------------------
B=$T_TMP/b1
CMD='id; grep -E "^(Seccomp|NoNewPrivs|CapBnd):" /proc/self/status; cat /proc/self/uid_map; echo pid1=$(cat /proc/1/comm); cat /data/from-image; cat /proc/sys/kernel/hostname' \
	oci_bundle "$B" "$T_TMP/img"
out=$(oci run --bundle "$B" r1 2>&1)
st=$?
expect_eq "run: exit status" 0 "$st"
expect_match "run: the process runs as root of its own user namespace" "uid=0\(root\)" "$out"
expect_match "run: seccomp filter in force" "Seccomp:[[:space:]]+2" "$out"
expect_match "run: no_new_privs" "NoNewPrivs:[[:space:]]+1" "$out"
expect_match "run: paddock's init is PID 1" "pid1=paddock-init" "$out"
expect_match "run: the bundle's root" "image-file" "$out"
expect_eq "run: hostname from config.json" runc "$(tail -n1 <<<"$out")"
if [ "$MODE" = root ]; then
	expect_match "run: uid 0 inside is an unprivileged host range, never host root" \
		"^ +0 +(1[6-9][0-9]{8}|[2-9][0-9]{9}) +65536$" "$(grep -E '^ +0 ' <<<"$out")"
else
	expect_match "run: rootless, the invoker is uid 0 inside" "^ +0 +$(id -u) +1$" "$(grep -E '^ +0 ' <<<"$out")"
fi
expect_eq "run: its state is gone" "" "$(ls "$OCI_ROOT")"

CMD='exit 3' oci_bundle "$B" "$T_TMP/img"
oci run --bundle "$B" r2 >/dev/null 2>&1
expect_eq "run: the process's exit status is the runtime's" 3 "$?"

# create, state, start, exec, kill, delete: as engines call them
CMD='echo started; trap "echo got-term; exit 7" TERM; while :; do sleep 0.1; done' \
	oci_bundle "$B" "$T_TMP/img"
oci create --bundle "$B" --pid-file "$T_TMP/c1.pid" c1 >"$T_TMP/c1.out" 2>&1
expect_eq "create" 0 "$?"
sup=$(cat "$T_TMP/c1.pid" 2>/dev/null)
state=$(oci state c1)
expect_match "state: created" '"status": "created"' "$state"
expect_match "state: the bundle" "\"bundle\": \"$B\"" "$state"
expect_match "the pid file names the supervisor" "paddock-oci" "$(tr '\0' ' ' </proc/"$sup"/cmdline 2>/dev/null)"
expect_eq "nothing ran before start" "" "$(cat "$T_TMP/c1.out")"
oci start c1
expect_eq "start" 0 "$?"
for _ in $(seq 50); do grep -q started "$T_TMP/c1.out" && break; sleep 0.1; done
expect_match "state: running" '"status": "running"' "$(oci state c1)"
expect_match "start: the process writes to create's stdout" started "$(cat "$T_TMP/c1.out")"
out=$(oci exec c1 sh -c 'echo in-exec; exit 5' 2>&1)
expect_eq "exec: its exit status" 5 "$?"
expect_match "exec: its output" in-exec "$out"
cat >"$T_TMP/proc.json" <<'JSON'
{"args": ["sh", "-c", "echo detached >/tmp/marker; sleep 30"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"]}
JSON
oci exec --detach --pid-file "$T_TMP/e1.pid" --process "$T_TMP/proc.json" c1
expect_eq "exec --detach --process" 0 "$?"
ep=$(cat "$T_TMP/e1.pid" 2>/dev/null)
for _ in $(seq 50); do oci exec c1 cat /tmp/marker 2>/dev/null | grep -q detached && break; sleep 0.1; done
expect_match "exec --detach: the process runs" detached "$(oci exec c1 cat /tmp/marker 2>&1)"
n=$(oci ps --format json c1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "${n:-0}" -ge 3 ] && ok "ps --format json lists the container's processes ($n)" \
	|| not_ok "ps --format json lists the container's processes ($n)"
expect_match "events --stats" '"pids": ?\{"current": ?[0-9]+' "$(oci events --stats c1)"
kill -TERM "$ep" 2>/dev/null
for _ in $(seq 50); do alive "$ep" || break; sleep 0.1; done
alive "$ep" && not_ok "a signal to exec's waiter reaches its process" \
	|| ok "a signal to exec's waiter reaches its process"
oci kill c1 TERM
for _ in $(seq 50); do oci state c1 | grep -q stopped && break; sleep 0.1; done
expect_match "kill TERM: stopped" '"status": "stopped"' "$(oci state c1)"
expect_match "...the process handled it" got-term "$(cat "$T_TMP/c1.out")"
oci delete c1
expect_eq "delete" 0 "$?"
out=$(oci state c1 2>&1)
expect_match "state after delete: no such container" "does not exist" "$out"

# pause and resume (runc's): a counting loop stops, and goes on; SIGKILL of a paused one
CMD='i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.05; done' oci_bundle "$B" "$T_TMP/img"
oci create --bundle "$B" p1 && oci start p1
for _ in $(seq 50); do [ -n "$(oci exec p1 cat /tmp/n 2>/dev/null)" ] && break; sleep 0.1; done
oci pause p1
expect_eq "pause" 0 "$?"
expect_match "state: paused" '"status": "paused"' "$(oci state p1)"
out=$(oci exec p1 true 2>&1)
expect_match "exec in a paused container is refused" "paused, not running|not running" "$out"
n1=$(oci resume p1 && oci exec p1 cat /tmp/n; oci pause p1)
sleep 0.5
n2=$(oci resume p1 && oci exec p1 cat /tmp/n)
[ -n "$n1" ] && [ -n "$n2" ] && [ $((n2 - n1)) -lt 5 ] && ok "paused: the loop did not count ($n1, then $n2)" \
	|| not_ok "paused: the loop did not count ($n1, then $n2)"
sleep 0.3
n3=$(oci exec p1 cat /tmp/n)
[ -n "$n3" ] && [ "$n3" -gt "$n2" ] && ok "resume: it counts again ($n2, then $n3)" \
	|| not_ok "resume: it counts again ($n2, then $n3)"
expect_match "state: running again" '"status": "running"' "$(oci state p1)"
oci pause p1
oci kill p1 KILL
for _ in $(seq 50); do oci state p1 | grep -q stopped && break; sleep 0.1; done
expect_match "SIGKILL of a paused container: stopped" '"status": "stopped"' "$(oci state p1)"
oci delete p1
out=$(oci pause p1 2>&1)
expect_match "pause of no container: says so" "does not exist|not running" "$out"

# delete --force of a running container; a SIGKILLed supervisor; kill before start
CMD='sleep 100' oci_bundle "$B" "$T_TMP/img"
oci create --bundle "$B" --pid-file "$T_TMP/c2.pid" c2 && oci start c2
out=$(oci delete c2 2>&1)
expect_match "delete of a running container is refused" "is running" "$out"
oci delete --force c2
expect_eq "delete --force of a running container" 0 "$?"
expect_eq "...nothing of it runs" "" "$(oci_procs)"
oci create --bundle "$B" --pid-file "$T_TMP/c3.pid" c3 && oci start c3
kill -9 "$(cat "$T_TMP/c3.pid")"
for _ in $(seq 50); do [ -z "$(oci_procs)" ] && break; sleep 0.1; done
expect_eq "a SIGKILLed supervisor takes its container with it" "" "$(oci_procs)"
expect_match "...state says stopped" '"status": "stopped"' "$(oci state c3)"
oci delete c3
expect_eq "...and delete cleans up" "" "$(ls "$OCI_ROOT")"
oci create --bundle "$B" c4 && oci kill c4 KILL
for _ in $(seq 50); do oci state c4 | grep -q stopped && break; sleep 0.1; done
expect_match "kill of a created container" '"status": "stopped"' "$(oci state c4)"
oci delete c4

# bad input: refused with the field named, nothing left
refuse() { # refuse NAME FIELD-REGEX PATCH
	local b=$T_TMP/bad
	rm -rf "$b"
	oci_bundle "$b" "$T_TMP/img" "$3"
	# to a file: a create that succeeds leaves its supervisor holding its stdout
	if oci create --bundle "$b" bad >"$T_TMP/refused" 2>&1; then
		oci delete --force bad
		not_ok "refused: $1 (created)"
		return
	fi
	out=$(cat "$T_TMP/refused")
	[[ "$out" =~ $2 ]] && ok "refused: $1" || not_ok "refused: $1 ($out)"
}
refuse "a uid outside the container's range" "process.user: .*got 70000:70000" 'c["process"]["user"] = {"uid": 70000, "gid": 70000}'
refuse "root's uid with another gid" "process.user: .*got 0:5" 'c["process"]["user"] = {"uid": 0, "gid": 5}'
refuse "a sysctl" "linux.sysctl.kernel.shmmax" 'c["linux"]["sysctl"] = {"kernel.shmmax": "1"}'
refuse "the host's network" "linux.namespaces: no network namespace" 'c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]'
refuse "an nfs mount" "mounts\[7\].type" 'c["mounts"].append({"destination": "/mnt", "type": "nfs", "source": "x:/y"})'
refuse "a mount below /proc" "mounts\[7\].destination" 'c["mounts"].append({"destination": "/proc/x", "type": "bind", "source": "/tmp", "options": ["bind"]})'
refuse "an unknown paddock annotation" "annotations.dev.paddock.netwrk.mode" 'c["annotations"] = {"dev.paddock.netwrk.mode": "none"}'
refuse "a bad limit annotation" "annotations.dev.paddock.limits.memory" 'c["annotations"] = {"dev.paddock.limits.memory": "lots"}'
refuse "a hook in the container" "hooks.startContainer" 'c["hooks"] = {"startContainer": [{"path": "/bin/true"}]}'
refuse "id mappings" "linux.uidMappings" 'c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 1000, "size": 1}]'
refuse "no process" "^paddock-oci: process: " 'del c["process"]'
out=$(oci create --bundle "$B" 'bad/id' 2>&1)
expect_match "refused: a bad container id" "id: expected a container id" "$out"
expect_eq "refusals leave nothing behind" "" "$(ls "$OCI_ROOT")"

# process.user: any id of the container's range, without capabilities (the pause container
# of a Kubernetes pod is 65535:65535)
if [ "$MODE" = root ]; then U=65535; else U=1000; fi
CMD='id -u; id -g; grep CapEff /proc/self/status' oci_bundle "$B" "$T_TMP/img" "c['process']['user'] = {'uid': $U, 'gid': $U}"
out=$(oci run --bundle "$B" u1 2>&1)
expect_match "process.user $U:$U" "^$U"$'\n'"$U" "$out"
expect_match "...without capabilities" "CapEff:[[:space:]]+0+$" "$out"

# linux.seccomp: the container's profile on top of paddock's filter, never instead
CMD='grep Seccomp_filters /proc/self/status; mkdir /tmp/denied && echo made; unshare -U true 2>/dev/null || echo paddock-still-denies' \
	oci_bundle "$B" "$T_TMP/img" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"], "syscalls": [{"names": ["mkdir", "mkdirat", "no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}'
out=$(oci run --bundle "$B" s1 2>&1)
expect_match "linux.seccomp: stacked on paddock's filter" "Seccomp_filters:[[:space:]]+2" "$out"
expect_match "linux.seccomp: its rule denies" "mkdir: .*Operation not permitted" "$out"
expect_no_match "...what it denies does not happen" "^made$" "$out"
refuse "a seccomp profile with notifications" "linux.seccomp.syscalls\[0\].action" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}'
refuse "an unknown seccomp action" "linux.seccomp.defaultAction" 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_MAYBE"}'

# root.readonly; a bind through the image's /var/run -> /run link (where Kubernetes mounts
# its service account token); the kubelet's /dev/termination-log, left out
mkdir -p "$T_TMP/token"
echo the-token >"$T_TMP/token/token"
chmod -R a+rX "$T_TMP/token"
CMD='touch /x 2>&1; touch /tmp/y && echo tmp-writable; cat /run/secrets/sa/token' \
	oci_bundle "$B" "$T_TMP/img" "c['root']['readonly'] = True; c['mounts'] += [{'destination': '/var/run/secrets/sa', 'type': 'bind', 'source': '$T_TMP/token', 'options': ['rbind', 'ro']}, {'destination': '/dev/termination-log', 'type': 'bind', 'source': '$T_TMP/token/token', 'options': ['rbind']}]"
out=$(oci run --bundle "$B" ro1 2>&1)
expect_match "root.readonly: the root is read-only" "Read-only file system" "$out"
expect_match "...its own mounts are not" "tmp-writable" "$out"
expect_match "a bind through a symlink of the image lands where it points" "the-token" "$out"

# annotations: limits and the network policy reach the sandbox
CMD='grep MemTotal /proc/meminfo; cat /etc/resolv.conf | grep -c "DNS filter"; env | grep -c -i ^http_proxy=' \
	oci_bundle "$B" "$T_TMP/img" 'c["annotations"] = {"dev.paddock.limits.memory": "300M", "dev.paddock.network.mode": "allowlist", "dev.paddock.network.allow": "example.test"}'
out=$(oci run --bundle "$B" a1 2>&1)
expect_match "annotation dev.paddock.limits.memory" "MemTotal: +307200 kB" "$out"
expect_match "annotation dev.paddock.network.mode: the proxy's variables" "^2$" "$(tail -n1 <<<"$out")"

# hooks: prestart and poststart with the state on stdin, poststop at delete
cat >"$T_TMP/hook.sh" <<HOOK
#!/bin/sh
cat >>"$T_TMP/hooks.log"
echo " \$1" >>"$T_TMP/hooks.log"
HOOK
chmod 755 "$T_TMP/hook.sh"
CMD='true' oci_bundle "$B" "$T_TMP/img" "c['hooks'] = {k: [{'path': '$T_TMP/hook.sh', 'args': ['hook', k]}] for k in ('prestart', 'createRuntime', 'poststart', 'poststop')}"
oci run --bundle "$B" h1 >/dev/null 2>&1
oci create --bundle "$B" h2 && oci delete h2
log=$(cat "$T_TMP/hooks.log" 2>/dev/null)
expect_match "hooks: prestart, createRuntime, poststart" "prestart.*createRuntime.*poststart" "$(echo $log)"
expect_match "hooks: the state on stdin" '"id": "h1"' "$log"
expect_match "hooks: poststop at delete" "poststop" "$log"

if [ "$MODE" != root ]; then
	diag "engines: skipped rootless (Podman would need /etc/subuid ranges for the test's uid; containerd and Docker run as root)"
	finish
fi

# ---- Podman ---------------------------------------------------------------------------------
if command -v podman >/dev/null; then
	[ -d /run/paddock-oci ] || made_run_root=1
	IMG=localhost/paddock-oci-test:$$
	podman_cleanup() { podman rm -f -a --filter "ancestor=$IMG" >/dev/null 2>&1; podman rmi -f "$IMG" >/dev/null 2>&1; }
	PM=(podman --runtime "$OCI")
	tar -C "$T_TMP/img" -c . | podman import - "$IMG" >/dev/null 2>&1
	out=$("${PM[@]}" run --rm --network none "$IMG" sh -c 'id; grep -E "^Seccomp:" /proc/self/status; cat /proc/self/uid_map; echo pid1=$(cat /proc/1/comm)' 2>&1)
	expect_match "podman run: the container runs under paddock" "pid1=paddock-init" "$out"
	expect_match "podman run: seccomp" "Seccomp:[[:space:]]+2" "$out"
	expect_match "podman run: an unprivileged host range" "^ +0 +(1[6-9][0-9]{8}|[2-9][0-9]{9}) +65536$" "$(grep -E '^ +0 ' <<<"$out")"
	"${PM[@]}" run --rm --network none "$IMG" sh -c 'exit 42' >/dev/null 2>&1
	expect_eq "podman run: the exit status" 42 "$?"
	# (the pause before the exit: conmon stops reading the terminal when the process ends, and a
	# loaded machine had not read the last line by then — seen under the sanitized CI run)
	out=$(script -qec "${PM[*]} run --rm -it --network none $IMG sh -c 'tty; test -t 0 && echo stdin-is-a-tty; sleep 0.5'" /dev/null 2>&1)
	expect_match "podman run -it: a terminal of the container's own devpts" "/dev/pts/[0-9]+" "$out"
	expect_match "podman run -it: stdin is a terminal" "stdin-is-a-tty" "$out"
	cid=$("${PM[@]}" run -d --network none "$IMG" sh -c 'trap "exit 3" TERM; while :; do sleep 0.1; done')
	out=$("${PM[@]}" exec "$cid" sh -c 'echo podman-exec; exit 4' 2>&1)
	expect_eq "podman exec: its exit status" 4 "$?"
	expect_match "podman exec: its output" podman-exec "$out"
	out=$(script -qec "${PM[*]} exec -it $cid tty" /dev/null 2>&1)
	expect_match "podman exec -it: a terminal" "/dev/pts/[0-9]+" "$out"
	"${PM[@]}" stop -t 5 "$cid" >/dev/null 2>&1
	expect_eq "podman stop: the process's own exit" 3 "$(podman inspect -f '{{.State.ExitCode}}' "$cid")"
	"${PM[@]}" rm "$cid" >/dev/null
	cid=$("${PM[@]}" run -d --network none "$IMG" sleep 100)
	"${PM[@]}" rm -f "$cid" >/dev/null 2>&1
	expect_eq "podman rm -f: nothing of the container runs" "" "$(oci_procs)"
	# a network namespace made here, joined as a Kubernetes pod's is (held by a process of
	# its own, not bound under /run/netns: nothing mounted on the host)
	unshare --net sleep 600 &
	nsp=$!
	NS=/proc/$nsp/ns/net
	in_ns() { nsenter --net="$NS" "$@"; }
	for _ in $(seq 50); do [ "$(readlink "$NS")" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.05; done
	in_ns ip link set lo up
	in_ns ip addr add 10.99.27.1/32 dev lo
	out=$("${PM[@]}" run --rm --network "ns:$NS" "$IMG" sh -c 'grep -c 10.99.27.1 /proc/net/fib_trie' 2>&1)
	[ "${out:-0}" -ge 1 ] 2>/dev/null && ok "podman --network ns:PATH: the container joins that namespace" \
		|| not_ok "podman --network ns:PATH: the container joins that namespace ($out)"
	# with egress rules the container gets paddock's own namespace, and what the proxy lets
	# out leaves from the given one (where alone 10.99.27.1 answers)
	nsenter --net="$NS" /usr/bin/python3 -m http.server --bind 10.99.27.1 8027 >/dev/null 2>&1 &
	srv=$!
	for _ in $(seq 50); do in_ns /usr/bin/python3 -c 'import socket; socket.create_connection(("10.99.27.1", 8027), 1)' 2>/dev/null && break; sleep 0.1; done
	out=$("${PM[@]}" run --rm --network "ns:$NS" --annotation dev.paddock.network.mode=allowlist \
		--annotation dev.paddock.network.allow=10.99.27.1/32:8027 "$IMG" \
		sh -c 'curl -sS -m 5 -o /dev/null -w "code=%{http_code}\n" http://10.99.27.1:8027/; grep -c 10.99.27.1 /proc/net/fib_trie' 2>&1)
	expect_match "...with egress rules, the proxy's connections leave from it" "code=200" "$out"
	expect_eq "...while the container has a namespace of its own" 0 "$(tail -n1 <<<"$out")"
	kill "$srv" "$nsp"
	wait "$srv" "$nsp" 2>/dev/null
	# kill -9 of the engine's monitor (conmon), then the engine cleans up
	cid=$("${PM[@]}" run -d --network none "$IMG" sleep 100)
	kill -9 "$(podman inspect -f '{{.State.ConmonPid}}' "$cid")" 2>/dev/null
	"${PM[@]}" rm -f "$cid" >/dev/null 2>&1
	for _ in $(seq 50); do [ -z "$(oci_procs)" ] && break; sleep 0.1; done
	expect_eq "kill -9 of conmon, then podman rm -f: nothing left" "" "$(oci_procs)"
	# without its monitor Podman never calls delete (as with crun): the state is the
	# stopped container's, and delete removes it
	expect_match "...the state says stopped" '"status": "stopped"' "$("$OCI" state "$cid" 2>&1)"
	"$OCI" delete "$cid"
	expect_eq "...and delete removes it" 0 "$(ls /run/paddock-oci 2>/dev/null | grep -c "$cid")"
else
	unavailable "podman is not installed (dev/deps --oci)"
fi

# ---- containerd: ctr through the runc v2 shim ---------------------------------------------
if start_containerd; then
	podman save --format oci-archive -o "$T_TMP/img.tar" "$IMG" >/dev/null 2>&1
	"${CTR[@]}" images import --base-name localhost/paddock-oci-test "$T_TMP/img.tar" >/dev/null 2>&1
	CI=$("${CTR[@]}" images ls -q | grep paddock-oci-test | head -n1)
	out=$("${CTR[@]}" run --rm --runc-binary "$OCI" "$CI" k1 sh -c 'echo ctr-ok; echo pid1=$(cat /proc/1/comm)' 2>&1)
	expect_match "ctr run --runc-binary: the container runs under paddock" "pid1=paddock-init" "$out"
	"${CTR[@]}" run -d --runc-binary "$OCI" --runc-root "$T_TMP/ctr-oci-root" "$CI" k2 sh -c 'trap "exit 4" TERM; while :; do sleep 0.1; done' >/dev/null
	sleep 0.5
	out=$("${CTR[@]}" task exec --exec-id e1 k2 sh -c 'echo ctr-exec' 2>&1)
	expect_match "ctr task exec" ctr-exec "$out"
	[ -d "$T_TMP/ctr-oci-root" ] && ok "the shim's --root is paddock-oci's state directory" \
		|| not_ok "the shim's --root is paddock-oci's state directory"
	"${CTR[@]}" task kill k2 >/dev/null
	for _ in $(seq 50); do "${CTR[@]}" task ls | grep -q "k2.*STOPPED" && break; sleep 0.1; done
	expect_match "ctr task kill: stopped" "k2 +[0-9]+ +STOPPED" "$("${CTR[@]}" task ls)"
	"${CTR[@]}" task rm k2 >/dev/null && "${CTR[@]}" c rm k2
	expect_eq "ctr task rm: the state is gone" "" "$(ls "$T_TMP/ctr-oci-root/default" 2>/dev/null)"
	"${CTR[@]}" run -d --runc-binary "$OCI" "$CI" k3 sleep 100 >/dev/null
	sleep 0.3
	"${CTR[@]}" task rm -f k3 >/dev/null 2>&1
	"${CTR[@]}" c rm k3 >/dev/null 2>&1
	expect_eq "ctr task rm -f of a running container: nothing left" "" "$(oci_procs)"
	"${CTR[@]}" images rm "$CI" >/dev/null 2>&1
else
	unavailable "containerd cannot start here (dev/deps --oci)"
fi

# ---- Docker: dockerd with a runtimes entry ------------------------------------------------
if start_dockerd; then
	podman save --format docker-archive -o "$T_TMP/img-docker.tar" "$IMG" >/dev/null 2>&1
	"${DOCKER[@]}" load -i "$T_TMP/img-docker.tar" >/dev/null 2>&1
	out=$("${DOCKER[@]}" run --rm --runtime paddock --network none "$IMG" sh -c 'echo docker-ok; echo pid1=$(cat /proc/1/comm)' 2>&1)
	expect_match "docker run --runtime paddock" "pid1=paddock-init" "$out"
	cid=$("${DOCKER[@]}" run -d --runtime paddock --network none "$IMG" sleep 100)
	out=$("${DOCKER[@]}" exec "$cid" sh -c 'echo docker-exec' 2>&1)
	expect_match "docker exec" docker-exec "$out"
	"${DOCKER[@]}" rm -f "$cid" >/dev/null
	expect_eq "docker rm -f: nothing left" "" "$(oci_procs)"
	"${DOCKER[@]}" rmi -f "$IMG" >/dev/null 2>&1
else
	unavailable "dockerd cannot start here (dev/deps --oci)"
fi
finish
