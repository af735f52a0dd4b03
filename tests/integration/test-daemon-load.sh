#!/bin/bash
# A bounded load test of paddockd: 8 clients at once, each for LOAD_SECONDS (default 10)
# looping create -> exec -> write a file -> read it back -> delete. Zero errors allowed, and
# afterwards no sandbox, process or socket left (run.sh checks the host).
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
SOCK=$T_TMP/sock
CLIENTS=8
SECONDS_EACH=${LOAD_SECONDS:-10}

"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/st" 2>"$T_TMP/daemon.log" &
DPID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done

client() {
	local n=$1 end=$((SECONDS + SECONDS_EACH)) ok=0 bad=0 id out
	while [ $SECONDS -lt $end ]; do
		id=$(curl -sf --unix-socket "$SOCK" -X POST http://x/v1/sandboxes \
			-d '{"ttl_s":120,"limits":{"memory":"128M","pids":64}}' |
			sed -n 's/.*"id":"\(sb_[a-z2-9]*\)".*/\1/p')
		if [ -z "$id" ]; then bad=$((bad + 1)); continue; fi
		out=$(curl -sf --unix-socket "$SOCK" -X POST "http://x/v1/sandboxes/$id/exec" \
			-d "{\"argv\":[\"echo\",\"client $n\"]}")
		[[ "$out" == *"\"stdout\":\"client $n\\n\""*'"exit_code":0'* ]] || bad=$((bad + 1))
		curl -sf --unix-socket "$SOCK" -X PUT -o /dev/null \
			"http://x/v1/sandboxes/$id/files?path=/workspace/f$n" --data-binary "data $n" ||
			bad=$((bad + 1))
		out=$(curl -sf --unix-socket "$SOCK" "http://x/v1/sandboxes/$id/files?path=/workspace/f$n")
		[ "$out" = "data $n" ] || bad=$((bad + 1))
		curl -sf --unix-socket "$SOCK" -X DELETE -o /dev/null "http://x/v1/sandboxes/$id" ||
			bad=$((bad + 1))
		ok=$((ok + 1))
	done
	echo "$ok $bad" >"$T_TMP/client.$n"
}

for n in $(seq $CLIENTS); do client "$n" & done
wait $(jobs -p | grep -v "^$DPID\$")
total=0
errors=0
for n in $(seq $CLIENTS); do
	read -r o b <"$T_TMP/client.$n"
	total=$((total + o))
	errors=$((errors + b))
done
diag "$CLIENTS clients x ${SECONDS_EACH}s: $total create/exec/write/read/delete rounds"
[ "$total" -gt 0 ] && ok "rounds completed ($total)" || not_ok "rounds completed"
expect_eq "no request failed" 0 "$errors"
r=$(curl -s --unix-socket "$SOCK" http://x/v1/sandboxes)
expect_eq "no sandbox is left" '{"sandboxes":[]}' "$r"
# kill -9 under load: 6 sandboxes each with a running process, 4 clients busy, then kill
ids=()
for n in $(seq 6); do
	id=$(curl -sf --unix-socket "$SOCK" -X POST http://x/v1/sandboxes -d '{"ttl_s":120}' |
		sed -n 's/.*"id":"\(sb_[a-z2-9]*\)".*/\1/p')
	curl -sf --unix-socket "$SOCK" -o /dev/null -X POST "http://x/v1/sandboxes/$id/exec" \
		-d '{"cmd":"while :; do sleep 0.1; done","background":true,"tag":"loop"}'
	ids+=("$id")
done
SECONDS_EACH=3
for n in $(seq 4); do client "$n" & done
sleep 1.5
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
wait $(jobs -p) 2>/dev/null
"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/st" 2>>"$T_TMP/daemon.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
adopted=0
for id in "${ids[@]}"; do
	r=$(curl -s --unix-socket "$SOCK" "http://x/v1/sandboxes/$id/processes/loop")
	[[ "$r" == *'"state":"running"'* ]] && adopted=$((adopted + 1))
done
expect_eq "kill -9 under load: every sandbox is back with its process running" 6 "$adopted"
# what the clients were creating when paddockd died is either adopted or gone: delete all
for id in $(curl -s --unix-socket "$SOCK" http://x/v1/sandboxes | grep -o 'sb_[a-z2-9]\{12\}' | sort -u); do
	curl -sf --unix-socket "$SOCK" -o /dev/null -X DELETE "http://x/v1/sandboxes/$id" ||
		not_ok "delete $id after the restart"
done
r=$(curl -s --unix-socket "$SOCK" http://x/v1/sandboxes)
expect_eq "after the restart, everything deleted" '{"sandboxes":[]}' "$r"

kill -TERM "$DPID"
wait "$DPID"
expect_eq "paddockd stops cleanly" 0 "$?"
expect_eq "no reconnect socket is left" "" "$(ls "$T_TMP/st/s")"
finish
