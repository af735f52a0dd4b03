#!/bin/bash
# The code interpreter (docs/code.md) end to end: paddockd with `--e2b 127.0.0.1:0` and E2B's
# official code-interpreter SDK, unchanged (e2b/code-interpreter.mjs: state, plots, DataFrames,
# errors, timeouts, contexts, bash), then paddockd's own /v1/sandboxes/{id}/code API with curl:
# its answers to bad input, and that nothing of a sandbox's kernels outlives it.
# run.sh: stage e2b
. "$(dirname "$0")/lib.sh"

E2B=$(cd "$(dirname "$0")" && pwd)/e2b

command -v node >/dev/null || unavailable "node is not installed (dev/deps --test installs it)"
/usr/bin/python3 -c 'import ipykernel, jupyter_client, matplotlib, pandas' 2>/dev/null ||
	unavailable "python3-ipykernel, -jupyter-client, -matplotlib or -pandas is not installed (dev/deps --test)"
need_npm_package "$E2B" @e2b/code-interpreter

SOCK=$T_TMP/sock
STATE=$T_TMP/state
# the domain that makes getHost() work on this machine: *.localhost is the loopback
DAEMON_ARGS=(--e2b-domain localhost)
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd --e2b 127.0.0.1:0 starts"; finish; }
port=$(e2b_port)
[ -n "$port" ] || { not_ok "paddockd logs its E2B port"; stop_daemon; finish; }
client_checks env E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" \
	E2B_DOMAIN="localhost:$port" E2B_API_KEY="e2b_paddock_test_key" node "$E2B/code-interpreter.mjs"

# ---- paddockd's own API --------------------------------------------------------------------
api() { curl -s --max-time 120 --unix-socket "$SOCK" "$@"; }
id=$(api -X POST http://x/v1/sandboxes -d '{}' | sed -n 's/.*"id":"\(sb_[a-z0-9]*\)".*/\1/p')
[ -n "$id" ] || { not_ok "a sandbox for the /code API"; stop_daemon; finish; }
out=$(api -X POST "http://x/v1/sandboxes/$id/code/execute" -d '{"code":"n = 6 * 7\nprint(n)"}')
expect_match "POST /code/execute streams NDJSON: a count, stdout, the end" \
	'"execution_count": 1}.*"stdout", "text": "42\\n".*"end_of_execution"' "$(echo $out)"
out=$(api -X POST "http://x/v1/sandboxes/$id/code/execute" -d '{"code":"n"}')
expect_match "the next call sees its variables" '"is_main_result": true, "text": "42"' "$out"
out=$(api -w ' %{http_code}' -X POST "http://x/v1/sandboxes/$id/code/execute" -d '{"code": 7}')
expect_match "code that is not a string: 400 naming it" '^code: expected a string 400$' "$out"
out=$(api -w ' %{http_code}' -X POST "http://x/v1/sandboxes/$id/code/execute" -d '[1]')
expect_match "a body that is not an object: 400" 'expected a JSON object 400$' "$out"
out=$(api -w ' %{http_code}' -X POST "http://x/v1/sandboxes/$id/code/execute" \
	-d '{"code":"1","context_id":"nope"}')
expect_match "an unknown context: 404 naming it" '^context nope not found 404$' "$out"
out=$(api -w ' %{http_code}' -X POST "http://x/v1/sandboxes/$id/code/contexts" -d '{"cwd":"rel"}')
expect_match "a relative cwd: 400 naming it" '^cwd: expected an absolute path 400$' "$out"
out=$(api -w ' %{http_code}' "http://x/v1/sandboxes/$id/code")
expect_match "/code alone: 404 saying what is served" '"field":"path".*404$' "$out"
out=$(api -w ' %{http_code}' -X POST "http://x/v1/sandboxes/sb_nosuchbox/code/execute" -d '{"code":"1"}')
expect_match "an unknown sandbox: 404" '404$' "$out"
# ---- paddock code (the CLI) -------------------------------------------------------------------
pc() { "$PADDOCK" code --socket "$SOCK" "$@"; }
expect_eq "paddock code: a run sees the last run's variables" "84" "$(pc "$id" 'n * 2')"
out=$(pc "$id" 'raise KeyError("nope")' 2>&1)
expect_eq "paddock code: code that raises exits 1" 1 "$?"
expect_match "paddock code: the traceback, on stderr" "KeyError: 'nope'" "$out"
mkdir -p "$T_TMP/img"
printf 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n' |
	pc --images "$T_TMP/img" "$id" - 2>/dev/null
expect_eq "paddock code --images: the plot is saved as a PNG" "89504e470d0a1a0a" \
	"$(head -c 8 "$T_TMP/img/result-1.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
ctx=$(pc new-context --language bash --cwd /tmp "$id")
expect_match "paddock code new-context: prints the context's id" '^[0-9a-f-]{36}$' "$ctx"
expect_eq "paddock code -c: the bash context, in its cwd" "/tmp 5" \
	"$(pc -c "$ctx" "$id" 'v=5' && pc -c "$ctx" "$id" 'echo "$PWD $v"')"
expect_match "paddock code contexts: lists it" "$ctx  bash +/tmp" "$(pc contexts "$id")"
pc rm "$id" "$ctx"
expect_eq "paddock code rm: exits 0" 0 "$?"
out=$(pc rm "$id" "$ctx" 2>&1)
expect_eq "paddock code rm of a removed context: exits 1" 1 "$?"
expect_match "paddock code rm of a removed context: says it is not found" "not found" "$out"
out=$(pc -l cobol "$id" 1 2>&1)
expect_eq "paddock code -l cobol: exits 125 naming --language" "125 paddock: --language: expected python or bash, got 'cobol'" "$? $out"

# ---- kill -9 of paddockd: the restarted one finds the interpreter, and its state ----------
daemon_inits >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd restarts after kill -9"; finish; }
expect_eq "after kill -9 and a restart: the variables of before" "84" "$(pc "$id" 'n * 2' 2>&1)"
expect_eq "after kill -9 and a restart: one interpreter runs in the sandbox" 1 \
	"$(own_pids '^python3 -I - 49999$' | wc -l)"

# the server and its kernel are the sandbox's processes, and go with it
kernels=$(own_pids 'ipykernel_launcher' | wc -l)
[ "$kernels" -ge 1 ] && ok "the kernel is a process below the sandbox" || not_ok "the kernel is a process below the sandbox"
api -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
daemon_inits >/dev/null
stop_daemon
expect_eq "paddockd exits 0 on SIGTERM" 0 "$?"
expect_eq "no paddockd or sandbox of this test is left" "0 inits" "$(daemon_inits) inits"
if [ "$T_FAILED" -gt 0 ]; then
	diag "client.mjs's stderr and paddockd's (last 60 lines each):"
	tail -n 60 "$T_TMP/client.log" | sed 's/^/# /'
	tail -n 60 "$T_TMP/daemon.log" | sed 's/^/# /'
fi
finish
