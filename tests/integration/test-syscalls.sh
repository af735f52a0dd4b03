#!/bin/bash
# Every syscall family the seccomp policy denies fails inside with the documented errno,
# and the ones that must keep working do.
. "$(dirname "$0")/lib.sh"
# extra `paddock run` arguments: "--user root" makes this the probes of a root inside
read -r -a RUN_ARGS <<<"${PADDOCK_TEST_RUN_ARGS:-}"

out=$("$PADDOCK" run ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} --ro-bind "$TRY_SYSCALL:/probe/try-syscall" --env PADDOCK_PROBE_INSIDE=1 \
	-- /probe/try-syscall 2>&1 </dev/null)
st=$?
expect_eq "probe ran" 0 "$st"
lines=$(echo "$out" | grep -c '"name"')
[ "$lines" -ge 40 ] && ok "probe reported $lines syscalls" || not_ok "probe reported only $lines lines: $out"
while IFS= read -r line; do
	name=$(echo "$line" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p')
	[ -n "$name" ] || continue
	case "$name" in
	getpid | fork | pthread_create | personality_query | personality_linux | socket_unix | \
		socket_inet6 | socket_netlink_route | setrlimit_self | chmod_plain)
		expect_match "$name still works" '"ret":[0-9]+,"errno":null' "$line" ;;
	clone3 | openat2)
		expect_match "$name -> ENOSYS (libc falls back)" '"errno":"ENOSYS"' "$line" ;;
	socket_netlink_*)
		expect_match "$name -> EPROTONOSUPPORT" '"errno":"EPROTONOSUPPORT"' "$line" ;;
	socket_*)
		expect_match "$name -> EAFNOSUPPORT" '"errno":"EAFNOSUPPORT"' "$line" ;;
	i386_*)
		# a kernel without ia32 emulation kills the int 0x80 caller: nothing to filter
		expect_match "$name -> EPERM (or no ia32 entry point)" '"errno":"EPERM"|"signal":"SIGSEGV"' "$line" ;;
	*)
		case "$line" in
		*'"skipped":true'*) ;;
		*) expect_match "$name -> EPERM" '"errno":"EPERM"' "$line" ;;
		esac ;;
	esac
done <<<"$out"

# ---- every refused call is on the record ----
# The probe's denials as events (seccomp.denied: syscall, arch, pid, command), rate-limited,
# and every one of them counted in the report.
"$PADDOCK" run ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} --log-format json -v --report "$T_TMP/r.json" \
	--ro-bind "$TRY_SYSCALL:/probe/try-syscall" -- /probe/try-syscall >"$T_TMP/out" \
	2>"$T_TMP/events" </dev/null
refused=$(grep -cE '"errno":"(EPERM|EAFNOSUPPORT|EPROTONOSUPPORT)"' "$T_TMP/out")
counted=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seccomp_denied"])' "$T_TMP/r.json")
expect_eq "the report counts every refused call ($refused)" "$refused" "$counted"
ev() { # ev PYTHON-EXPR over the list e of seccomp.denied events
	/usr/bin/python3 -c '
import json, sys
e = []
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("paddock: "):
        l = l.split(" ", 2)[2]
    try:
        d = json.loads(l)
    except ValueError:
        continue
    if d.get("event") == "seccomp.denied":
        e.append(d)
print(eval(sys.argv[2]))' "${2:-$T_TMP/events}" "$1"
}
expect_eq "at most a burst of 20 events at once, the rest counted as unreported" "True" \
	"$(ev 'len(e) <= 25 and len(e) + sum(d["unreported"] for d in e) <= '"$counted")"
"$PADDOCK" run ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} --log-format json -v --ro-bind "$TRY_SYSCALL:/probe/try-syscall" -- \
	/probe/try-syscall mount socket_vsock ptrace >/dev/null 2>"$T_TMP/events2" </dev/null
expect_eq "seccomp.denied names the call, its architecture, pid and command" "True" \
	"$(ev 'any(d["syscall"] == "mount" and d["arch"] == "x86_64" and d["command"] == "try-syscall" and d["pid"] > 1 for d in e)' "$T_TMP/events2")"
expect_eq "...a socket family (AF_VSOCK) and ptrace too" "True" \
	"$(ev '{"socket", "ptrace"} <= {d["syscall"] for d in e}' "$T_TMP/events2")"
expect_eq "...the compatibility answers (clone3, openat2: ENOSYS) are not denials" "False" \
	"$(ev 'any(d["syscall"] in ("clone3", "openat2") for d in e)')"
run_sb out st ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} -- sh -c 'unshare -r true 2>/dev/null; echo "still here"'
expect_eq "a refused call is answered and the command goes on" "still here" "$out"

finish
