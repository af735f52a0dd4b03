#!/bin/bash
# Exit statuses, signals, timeouts, and the death of the supervisor.
. "$(dirname "$0")/lib.sh"

run_sb out st -- sh -c 'exit 3'
expect_eq "exit code propagates" 3 "$st"
run_sb out st -- sh -c 'kill -TERM $$'
expect_eq "death by signal N is 128+N" 143 "$st"
run_sb out st -- no-such-command-xyz
expect_eq "command not found is 127" 127 "$st"
expect_match "... with a one-line reason" "^paddock: argv: execute 'no-such-command-xyz': No such file or directory$" "$out"
run_sb out st -- /etc/passwd
expect_eq "not executable is 126" 126 "$st"
run_sb out st --hostname 'bad host' -- true
expect_eq "paddock's own failure is 125" 125 "$st"
expect_match "... naming the field" "^paddock: hostname: " "$out"
run_sb out st --cwd /does/not/exist -- true
expect_eq "missing cwd is 126" 126 "$st"
expect_match "... naming the field" "cwd" "$out"

marker=$((RANDOM + 100000))
start=$(date +%s%N)
run_sb out st --timeout 1 --report "$T_TMP/report.json" -- sh -c "setsid sh -c 'sleep $marker & sleep $marker' & (sleep $marker &) ; sleep $marker"
end=$(date +%s%N)
expect_eq "timeout kills with SIGKILL (137)" 137 "$st"
ms=$(((end - start) / 1000000))
[ "$ms" -lt 5000 ] && ok "timeout ends the run promptly (${ms} ms)" || not_ok "timeout took ${ms} ms"
sleep 0.2
left=$(own_pids "sleep $marker")
expect_eq "no daemonized process survives the timeout" "" "$left"
report=$(cat "$T_TMP/report.json")
expect_match "report says timeout" '"reason": "timeout"' "$report"

# SIGTERM to the supervisor reaches the command, which can exit cleanly
"$PADDOCK" run -- sh -c 'trap "exit 7" TERM; sleep 100 & wait' </dev/null &
pid=$!
for _ in $(seq 50); do [ -n "$(own_pids "^sleep 100$")" ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
expect_eq "SIGTERM is forwarded to the command" 7 $?

# SIGKILL of the supervisor leaves nothing running
marker=$((RANDOM + 200000))
"$PADDOCK" run -- sh -c "setsid sleep $marker & sleep $marker" </dev/null &
pid=$!
for _ in $(seq 50); do [ "$(own_pids "^sleep $marker$" | wc -l)" -ge 2 ] && break; sleep 0.1; done
expect_eq "sandbox processes are running" 2 "$(own_pids "^sleep $marker$" | wc -l)"
kill -KILL $pid
wait $pid 2>/dev/null
for _ in $(seq 50); do [ -z "$(own_pids "sleep $marker")" ] && break; sleep 0.1; done
expect_eq "SIGKILL of paddock leaves no process" "" "$(own_pids "sleep $marker")"

run_sb out st --report "$T_TMP/r2.json" -- sh -c 'exit 5'
r=$(cat "$T_TMP/r2.json")
expect_match "report: exit_code" '"exit_code": 5' "$r"
expect_match "report: reason" '"reason": "exited"' "$r"
expect_match "report: wall_s" '"wall_s": [0-9.]+' "$r"

finish
