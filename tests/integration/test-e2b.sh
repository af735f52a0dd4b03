#!/bin/bash
# paddockd's E2B front end end to end (docs/e2b.md), driven by the official E2B JS SDK:
# a real paddockd with `--e2b 127.0.0.1:0` (port picked by the kernel, read from its log), and
# e2b/client.mjs with nothing but the SDK's environment pointing at it. The client checks the
# control plane, commands, PTYs, files, getHost(), debug mode, tenants (a second paddockd with
# --tokens, its own) and raw protocol abuse; each line it prints becomes a check here. Then
# nothing may be left: no sandbox in paddockd's own API, no process below it, and paddockd
# exits 0 on SIGTERM. run.sh stages tests/integration/e2b beside this script, npm packages
# included (dev/test runs `npm ci` there).
. "$(dirname "$0")/lib.sh"

E2B=$(cd "$(dirname "$0")" && pwd)/e2b

command -v node >/dev/null || unavailable "node is not installed (dev/deps --test installs it)"
# the SDK's own engines field: >=20.18.1 <21 || >=22
node -e '
	const [a, b, c] = process.versions.node.split(".").map(Number);
	process.exit(a >= 22 || (a === 20 && (b > 18 || (b === 18 && c >= 1))) ? 0 : 1)' ||
	unavailable "node $(node --version) is older than the E2B SDK needs (20.18.1, or 22)"
need_npm_package "$E2B" e2b

SOCK=$T_TMP/sock
STATE=$T_TMP/state
# a domain that is no loopback name: Hosts name it, the SDK is told it as it is
DAEMON_ARGS=(--e2b-domain e2b.local)
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd --e2b 127.0.0.1:0 starts"; finish; }
port=$(e2b_port)
if [ -z "$port" ]; then
	not_ok "paddockd logs 'paddockd: e2b on 127.0.0.1:PORT (domain e2b.local)'"
	diag "$(cat "$T_TMP/daemon.log")"
	stop_daemon
	finish
fi
ok "paddockd logs 'paddockd: e2b on 127.0.0.1:$port (domain e2b.local)'"
client_checks env E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" \
	E2B_DOMAIN=e2b.local E2B_API_KEY="e2b_paddock_test_key" \
	E2B_PORT="$port" E2B_SOCK="$SOCK" E2B_DPID="$DPID" PADDOCKD="$PADDOCKD" T_TMP="$T_TMP" \
	node "$E2B/client.mjs"

# what the client left, through paddockd's own API: deleted here so that one failure does not
# cascade into the leak check, but a failure all the same
left=$(curl -s --max-time 10 --unix-socket "$SOCK" http://x/v1/sandboxes |
	node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => {
		try { console.log(JSON.parse(s).sandboxes.map((x) => x.id).join(" ")) } catch { console.log("?") } })')
expect_eq "no sandbox is left in paddockd" "" "$left"
for id in $left; do
	[ "$id" = "?" ] || curl -s --max-time 10 --unix-socket "$SOCK" -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
done
daemon_inits >/dev/null # the inits of this test's paddockds, known from here on
stop_daemon
expect_eq "paddockd exits 0 on SIGTERM" 0 "$?"
# this test's paddockds and their sandboxes' inits, not the machine's other sandboxes
expect_eq "no paddockd or sandbox of this test is left" "0 inits" \
	"$(daemon_inits) inits$(ps -e -o pid=,comm=,args= | awk -v d="$T_TMP/" 'index($0, d) && $2 == "paddockd"')"
if [ "$T_FAILED" -gt 0 ]; then
	diag "client.mjs's stderr and paddockd's (last 60 lines each):"
	tail -n 60 "$T_TMP/client.log" | sed 's/^/# /'
	tail -n 60 "$T_TMP/daemon.log" | sed 's/^/# /'
fi
finish
