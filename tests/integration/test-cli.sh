#!/bin/bash
# The paddock client commands against a real paddockd: create, ls, inspect, exec (exit
# status, stdin, background), ps, cp both ways, files, logs, ttl, rm, and their errors.
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
export PADDOCK_SOCKET=$T_TMP/sock

"$PADDOCKD" --socket "$PADDOCK_SOCKET" --state-dir "$T_TMP/st" --destroy-on-exit \
	2>"$T_TMP/daemon.log" &
DPID=$!
for _ in $(seq 100); do [ -S "$PADDOCK_SOCKET" ] && break; sleep 0.05; done

out=$("$PADDOCK" ls --socket "$T_TMP/nope" 2>&1)
expect_eq "no daemon: exit 125" 125 "$?"
expect_match "no daemon: says which socket" "cannot connect to paddockd at '$T_TMP/nope'" "$out"

id=$("$PADDOCK" create --memory 256M --ttl 600 --metadata task=cli 2>&1)
expect_match "create prints the id" '^sb_[a-z2-9]{12}$' "$id"
out=$("$PADDOCK" create --memory lots 2>&1)
expect_eq "create: a bad flag fails (1 or 2)" 1 "$([ $? -ne 0 ] && echo 1)"
expect_match "create: the error names the field" "memory" "$out"

out=$("$PADDOCK" ls)
expect_match "ls: the sandbox with its metadata" "$id +running .*task=cli" "$out"
out=$("$PADDOCK" inspect "$id")
expect_match "inspect: the spec's memory limit" '"memory": "256M"' "$out"
out=$("$PADDOCK" inspect sb_aaaaaaaaaaaa 2>&1)
expect_eq "inspect: unknown id: exit 1" 1 "$?"

out=$("$PADDOCK" exec "$id" -- sh -c 'echo to-out; echo to-err >&2; exit 5' 2>"$T_TMP/err")
expect_eq "exec: the command's exit status" 5 "$?"
expect_eq "exec: stdout" "to-out" "$out"
expect_eq "exec: stderr" "to-err" "$(cat "$T_TMP/err")"
out=$(printf 'one\ntwo\n' | "$PADDOCK" exec "$id" -- wc -l)
expect_eq "exec: stdin is passed" "2" "$(echo $out)"
out=$("$PADDOCK" exec "$id" -- no-such-command 2>&1)
expect_eq "exec: a missing command: 127" 127 "$?"

if command -v script >/dev/null; then
	out=$(printf 'typed\n' | script -qec "$PADDOCK exec -it $id -- sh -c 'tty; read l; echo got \$l; exit 3'" /dev/null; echo "st=$?")
	out=$(tr -d '\r' <<<"$out")
	expect_match "exec -it: a terminal inside" "/dev/pts/[0-9]+" "$out"
	expect_match "exec -it: typed input reaches it" "got typed" "$out"
	expect_match "exec -it: its exit status" "st=3" "$out"
fi

pid=$("$PADDOCK" exec -d --tag bg "$id" -- sleep 60)
expect_match "exec -d prints the pid" '^[0-9]+$' "$pid"
out=$("$PADDOCK" ps "$id")
expect_match "ps: the background process" "$pid +bg +running" "$out"

printf 'local content\n' >"$T_TMP/up.txt"
"$PADDOCK" cp "$T_TMP/up.txt" "$id:/workspace/sub/up.txt"
expect_eq "cp up: exit 0" 0 "$?"
out=$("$PADDOCK" exec "$id" -- cat /workspace/sub/up.txt)
expect_eq "cp up: the sandbox sees it" "local content" "$out"
"$PADDOCK" cp "$id:/workspace/sub/up.txt" "$T_TMP/down.txt"
expect_eq "cp down: same bytes" "local content" "$(cat "$T_TMP/down.txt")"
"$PADDOCK" cp "$id:/workspace/sub/up.txt" "$T_TMP/down.txt" 2>/dev/null
expect_eq "cp down: never overwrites a local file" 1 "$([ $? -ne 0 ] && echo 1)"
"$PADDOCK" cp "$id:/workspace/none" "$T_TMP/none.txt" 2>/dev/null
expect_eq "cp down: a missing file fails" 1 "$?"
[ -e "$T_TMP/none.txt" ] && not_ok "cp down: nothing left locally on failure" ||
	ok "cp down: nothing left locally on failure"

"$PADDOCK" files mkdir -p "$id" /workspace/a/b
out=$("$PADDOCK" files ls --depth 3 "$id" /workspace)
expect_match "files ls: the new directories and the upload" "/workspace/a/b.*/workspace/sub/up.txt" "$(echo $out)"
"$PADDOCK" files mv "$id" /workspace/sub/up.txt /workspace/a/moved.txt
out=$("$PADDOCK" files stat "$id" /workspace/a/moved.txt)
expect_match "files mv + stat" "file .*/workspace/a/moved.txt" "$out"
"$PADDOCK" files rm -r "$id" /workspace/a
out=$("$PADDOCK" files stat "$id" /workspace/a 2>&1)
expect_eq "files rm -r: gone" 1 "$?"

out=$("$PADDOCK" logs "$id")
expect_match "logs: lifecycle events" "sandbox.created.*exec.exited" "$(echo $out)"
out=$("$PADDOCK" ttl "$id" 1200)
expect_eq "ttl: exit 0" 0 "$?"
out=$("$PADDOCK" --json inspect "$id" 2>/dev/null || "$PADDOCK" inspect --json "$id")
expect_match "inspect --json: the new ttl" '"ttl_s": ?1200' "$out"

"$PADDOCK" rm "$id" sb_aaaaaaaaaaaa >/dev/null 2>&1
expect_eq "rm: exit 1 when one id is unknown" 1 "$?"
out=$("$PADDOCK" ls -q)
expect_eq "rm: the sandbox is gone" "" "$out"

kill -TERM "$DPID"
wait "$DPID"
expect_eq "paddockd stops cleanly" 0 "$?"
finish
