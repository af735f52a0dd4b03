#!/bin/bash
# paddockd's templates (docs/api.md, "Templates"): named specs kept in the store, made and
# listed through the API and `paddock template`, used by creates (`paddock create
# --template`, "template" in the body) with the request's fields over them, per tenant, kept
# across a restart, and used by E2B's Sandbox.create('NAME') with the official SDK; a tenant's
# own are bounded (max_templates), and so are its sandboxes (max_sandboxes).
# run.sh: stage e2b
. "$(dirname "$0")/lib.sh"

E2B=$(cd "$(dirname "$0")" && pwd)/e2b
command -v node >/dev/null || unavailable "node is not installed (dev/deps --test installs it)"
need_npm_package "$E2B" e2b
SOCK=$T_TMP/sock
STATE=$T_TMP/state
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'alice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n' >"$T_TMP/tokens"
chmod 600 "$T_TMP/tokens"
DAEMON_ARGS=(--listen "127.0.0.1:$PORT" --tokens "$T_TMP/tokens" --e2b-domain localhost)
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd starts"; finish; }

api() { curl -s --max-time 30 --unix-socket "$SOCK" -w '\n%{http_code}' "$@"; }
tcp() { local who=$1; shift; curl -s --max-time 30 -H "Authorization: Bearer $who" -w '\n%{http_code}' "$@"; }
code() { tail -n1 <<<"$1"; }
body() { sed '$d' <<<"$1"; }
jq_() {
	/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); v=eval(sys.argv[1])
print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$1"
}
pd() { local c=$1; shift; "$PADDOCK" "$c" --socket "$SOCK" "$@"; }

# ---- make, list, show ------------------------------------------------------------------------
r=$(api -X POST http://x/v1/templates -d '{"name":"py-tools","spec":{"env":{"TOOL":"hammer"},"cwd":"/tmp","limits":{"memory":"256M","pids":64}}}')
expect_eq "POST /v1/templates: 201" 201 "$(code "$r")"
expect_eq "...answers the template, the operator's" "py-tools operator 256M" \
	"$(body "$r" | jq_ 'd["name"], d["owner"], d["spec"]["limits"]["memory"]')"
r=$(api -X POST http://x/v1/templates -d '{"name":"py-tools","spec":{}}')
expect_eq "the same name again: 409" 409 "$(code "$r")"
expect_match "...saying PUT replaces it" "PUT /v1/templates/py-tools" "$(body "$r")"
r=$(api -X POST http://x/v1/templates -d '{"name":"Bad Name","spec":{}}')
expect_eq "a bad name: 400 naming it" "400 name" "$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
r=$(api -X POST http://x/v1/templates -d '{"name":"x","spec":{"limits":{"memory":"lots"}}}')
expect_eq "a spec paddock cannot create: 400 naming the field" "400 spec.limits.memory" \
	"$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
r=$(api -X POST http://x/v1/templates -d '{"name":"x","spec":{"no_such_field":1}}')
expect_eq "an unknown spec field: 400" 400 "$(code "$r")"
r=$(api -X POST http://x/v1/templates -d '{"name":"x","spec":[]}')
expect_eq "a spec that is not an object: 400 naming spec" "400 spec" "$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
r=$(api -X POST http://x/v1/templates -d '{"name":"x","spec":{},"extra":1}')
expect_eq "an unknown request field: 400" 400 "$(code "$r")"
expect_eq "nothing refused was stored" "py-tools" "$(pd template ls | awk 'NR > 1 { print $1 }' | tr '\n' ' ' | sed 's/ $//')"
expect_match "paddock template show: the spec" '"TOOL": "hammer"' "$(pd template show py-tools)"
out=$(pd template show nope 2>&1)
expect_eq "paddock template show of an unknown one: exit 1" 1 "$?"
expect_match "...saying so" "no template 'nope'" "$out"

# ---- create from it -------------------------------------------------------------------------
r=$(api -X POST http://x/v1/sandboxes -d '{"template":"py-tools","limits":{"memory":"128M"},"env":{"EXTRA":"1"}}')
expect_eq "create with a template: 201" 201 "$(code "$r")"
ID=$(body "$r" | jq_ 'd["id"]')
expect_eq "...the request's limits member wins, the template's others stay" "128M 64" \
	"$(body "$r" | jq_ 'd["spec"]["limits"]["memory"], d["spec"]["limits"]["pids"]')"
r=$(api -X POST "http://x/v1/sandboxes/$ID/exec" -d '{"argv":["/bin/sh","-c","echo $TOOL $EXTRA; pwd"]}')
expect_match "...its commands have the template's env and cwd, and the request's env" \
	'hammer 1\\n/tmp\\n' "$(body "$r")"
api -X DELETE "http://x/v1/sandboxes/$ID" >/dev/null
r=$(api -X POST http://x/v1/sandboxes -d '{"template":"nope"}')
expect_eq "an unknown template: 404 naming template" "404 template" "$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
r=$(api -X POST http://x/v1/sandboxes -d '{"template":7}')
expect_eq "a template that is not a name: 400 naming template" "400 template" "$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
ID=$(pd create --template py-tools --env EXTRA=2)
expect_match "paddock create --template: a sandbox" '^sb_' "$ID"
expect_eq "...with the template's env and the flag's" "hammer 2" "$(pd exec "$ID" -- /bin/sh -c 'echo $TOOL $EXTRA')"
pd rm "$ID" >/dev/null

# ---- tenants --------------------------------------------------------------------------------
r=$(tcp aaaaaaaaaaaaaaaaaaaaaaaa -X POST "http://127.0.0.1:$PORT/v1/templates" -d '{"name":"mine","spec":{"env":{"WHO":"alice"}}}')
expect_eq "a tenant makes its own template: 201, owner tenant" "201 tenant" "$(code "$r") $(body "$r" | jq_ 'd["owner"]')"
r=$(tcp aaaaaaaaaaaaaaaaaaaaaaaa "http://127.0.0.1:$PORT/v1/templates")
expect_eq "...it lists its own and the operator's" "mine py-tools" "$(body "$r" | jq_ '" ".join(t["name"] for t in d["templates"])')"
r=$(tcp bbbbbbbbbbbbbbbbbbbbbbbb "http://127.0.0.1:$PORT/v1/templates")
expect_eq "another tenant sees the operator's only" "py-tools" "$(body "$r" | jq_ '" ".join(t["name"] for t in d["templates"])')"
r=$(tcp bbbbbbbbbbbbbbbbbbbbbbbb -X POST "http://127.0.0.1:$PORT/v1/sandboxes" -d '{"template":"mine"}')
expect_eq "...and cannot create from alice's: 404" 404 "$(code "$r")"
r=$(tcp bbbbbbbbbbbbbbbbbbbbbbbb -X DELETE "http://127.0.0.1:$PORT/v1/templates/py-tools")
expect_eq "...nor delete the operator's: 404" 404 "$(code "$r")"
r=$(tcp aaaaaaaaaaaaaaaaaaaaaaaa -X POST "http://127.0.0.1:$PORT/v1/sandboxes" -d '{"template":"mine"}')
expect_eq "alice creates from her own: 201" 201 "$(code "$r")"
AID=$(body "$r" | jq_ 'd["id"]')
tcp aaaaaaaaaaaaaaaaaaaaaaaa -X DELETE "http://127.0.0.1:$PORT/v1/sandboxes/$AID" >/dev/null
r=$(curl -s -w '\n%{http_code}' "http://127.0.0.1:$PORT/v1/templates")
expect_eq "no token: 401" 401 "$(code "$r")"

# ---- kept across a restart; E2B's SDK ------------------------------------------------------
stop_daemon
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd restarts"; finish; }
expect_match "after a restart the templates are there" '"TOOL": "hammer"' "$(pd template show py-tools)"
port=$(e2b_port)
# with --tokens, an E2B API key is a tenant's token: alice uses the operator's template
client_checks env E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" \
	E2B_DOMAIN="localhost:$port" E2B_API_KEY="aaaaaaaaaaaaaaaaaaaaaaaa" node "$E2B/template.mjs"

# ---- replace, remove ------------------------------------------------------------------------
printf '{"env":{"TOOL":"saw"}}' >"$T_TMP/t.json"
pd template put py-tools "$T_TMP/t.json"
expect_eq "paddock template put replaces it" 0 "$?"
expect_match "...with the new spec" '"TOOL": "saw"' "$(pd template show py-tools)"
printf '[1]' >"$T_TMP/bad.json"
out=$(pd template put py-tools "$T_TMP/bad.json" 2>&1)
expect_eq "paddock template put of a file that is no spec: exit 125" 125 "$?"
expect_match "...the spec is unchanged" '"TOOL": "saw"' "$(pd template show py-tools)"
pd template rm py-tools
expect_eq "paddock template rm: exit 0" 0 "$?"
out=$(pd template rm py-tools 2>&1)
expect_eq "rm again: exit 1" 1 "$?"
expect_match "...no template" "no template 'py-tools'" "$out"

# ---- a tenant's own templates are bounded (max_templates) ------------------------------------
stop_daemon
printf '{"max_templates": 2, "max_sandboxes": 2}' >"$T_TMP/limits.json"
start_daemon --config "$T_TMP/limits.json" || { not_ok "paddockd starts with max_templates"; finish; }
A=aaaaaaaaaaaaaaaaaaaaaaaa
T=http://127.0.0.1:$PORT/v1/templates
r=$(tcp $A -X POST "$T" -d '{"name":"two","spec":{}}')
expect_eq "alice's second template (she has 'mine'): 201" 201 "$(code "$r")"
r=$(tcp $A -X POST "$T" -d '{"name":"three","spec":{}}')
expect_eq "a third past max_templates 2: 429 naming the bound" "429 limit max_templates" \
	"$(code "$r") $(body "$r" | jq_ 'd["error"]["code"], d["error"]["field"]')"
expect_match "...and the limit" "has 2 templates, the most allowed \(max_templates 2\)" "$(body "$r")"
r=$(tcp $A -X PUT "$T/three" -d '{"spec":{}}')
expect_eq "a PUT that would make a new one: 429 too" "429 max_templates" \
	"$(code "$r") $(body "$r" | jq_ 'd["error"]["field"]')"
r=$(tcp $A -X PUT "$T/two" -d '{"spec":{"env":{"A":"1"}}}')
expect_eq "replacing one she has: 200" 200 "$(code "$r")"
r=$(tcp bbbbbbbbbbbbbbbbbbbbbbbb -X POST "$T" -d '{"name":"three","spec":{}}')
expect_eq "the bound is per tenant: bob's first is 201" 201 "$(code "$r")"
r=$(tcp $A "$T")
expect_eq "nothing refused was stored" "mine two" \
	"$(body "$r" | jq_ '" ".join(t["name"] for t in d["templates"])')"
tcp $A -X DELETE "$T/two" >/dev/null
r=$(tcp $A -X POST "$T" -d '{"name":"three","spec":{}}')
expect_eq "once she deletes one, a new one fits: 201" 201 "$(code "$r")"

# ---- and so are its sandboxes (max_sandboxes) ------------------------------------------------
S=http://127.0.0.1:$PORT/v1/sandboxes
ids=()
for i in 1 2; do
	r=$(tcp $A -X POST "$S" -d '{}')
	expect_eq "alice's sandbox $i of max_sandboxes 2: 201" 201 "$(code "$r")"
	ids+=("$(body "$r" | jq_ 'd["id"]')")
done
r=$(tcp $A -X POST "$S" -d '{}')
expect_eq "a third past max_sandboxes 2: 429 naming the bound" "429 limit max_sandboxes" \
	"$(code "$r") $(body "$r" | jq_ 'd["error"]["code"], d["error"]["field"]')"
expect_match "...and the limit" "has 2 sandboxes, the most allowed \(max_sandboxes 2\)" "$(body "$r")"
r=$(tcp $A "$S")
expect_eq "nothing refused was made: alice has 2" 2 "$(body "$r" | jq_ 'len(d["sandboxes"])')"
r=$(tcp bbbbbbbbbbbbbbbbbbbbbbbb -X POST "$S" -d '{}')
expect_eq "the bound is per tenant: bob's first is 201" 201 "$(code "$r")"
bob_id=$(body "$r" | jq_ 'd["id"]')
expect_eq "alice deletes one: 204" 204 "$(code "$(tcp $A -X DELETE "$S/${ids[0]}")")"
r=$(tcp $A -X POST "$S" -d '{}')
expect_eq "then a new one fits: 201" 201 "$(code "$r")"
tcp $A -X DELETE "$S/$(body "$r" | jq_ 'd["id"]')" >/dev/null
tcp $A -X DELETE "$S/${ids[1]}" >/dev/null
tcp bbbbbbbbbbbbbbbbbbbbbbbb -X DELETE "$S/$bob_id" >/dev/null
stop_daemon
expect_eq "paddockd exits 0 on SIGTERM" 0 "$?"
expect_eq "no paddockd or sandbox of this test is left" "0 inits" "$(daemon_inits) inits"
finish
