#!/bin/bash
# Every syscall family the seccomp policy denies fails inside with the documented errno,
# and the ones that must keep working do.
. "$(dirname "$0")/lib.sh"

out=$("$PADDOCK" run --ro-bind "$TRY_SYSCALL:/probe/try-syscall" --env PADDOCK_PROBE_INSIDE=1 \
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

finish
