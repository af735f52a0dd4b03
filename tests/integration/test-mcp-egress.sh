#!/bin/bash
# run.sh: netns
# paddock mcp with the operator's network policy and secrets, end to end in the test's own
# network (netns-wrap.sh): the default sandbox reaches what the operator allowed and no more;
# an agent's create_sandbox may narrow the policy, never widen it; a secret is brokered
# for the agent's commands without the agent (or its tool results) ever holding the value.
. "$(dirname "$0")/lib.sh"

: "${EGRESS_DIR:?run.sh runs this test inside netns-wrap.sh}"
H=$EGRESS_DIR/hosts
REQ=$EGRESS_DIR/requests.jsonl
PY=/usr/bin/python3
DRIVE=$(dirname "$0")/mcp-drive.py
REAL="ghp_MCPs3cr3tV4lue0123456789abcdefXYZ"
export API_KEY=$REAL
C='curl -sS -m 5 -o /dev/null -w %{http_code}'

# mcp SCRIPT_JSON: one JSON line per call, in OUT
mcp() {
	OUT=$($PY "$DRIVE" "$1" -- "$PADDOCK" mcp ${MCP_EXTRA:-} --resolve-hosts "$H" \
		--upstream-ca "$EGRESS_DIR/ca.pem" --allow allowed.test --allow '*.wild.test' \
		--allow api.test --secret 'API_KEY@api.test' --memory 256M 2>"$T_TMP/mcp.err")
	ST=$?
}
# field N KEY: KEY of the Nth answer line
field() { sed -n "${1}p" <<<"$OUT" | $PY -c "import json,sys; v=json.load(sys.stdin); print(v.get('$2', ''))"; }

mcp '[["run_command", {"command": "'"$C"' http://allowed.test/; echo; '"$C"' http://denied.test/; echo; '"$C"' https://www.wild.test/ -k"}],
      ["create_sandbox", {"network": {"allow": ["denied.test"]}}],
      ["create_sandbox", {"network": {"mode": "open"}}],
      ["create_sandbox", {"network": {"allow": ["10.0.0.0/8"]}}],
      ["create_sandbox", {"network": {"allow": ["*.test"]}}],
      ["create_sandbox", {"network": {"allow": ["www.wild.test"], "deny": ["allowed.test"]}}]]'
expect_eq "the session ended cleanly" 0 "$ST"
expect_eq "operator allowed allowed.test: 200; denied.test: 403; *.wild.test: 200" \
	"$(printf '200\n403\n200')" "$(field 1 stdout)"
expect_match "create_sandbox: a host the operator did not allow is refused, naming the rule" \
	"network.allow\[0\]: 'denied.test' is not allowed by the operator's network policy" "$(field 2 text)"
expect_match "create_sandbox: open mode over an allowlist operator is refused" \
	"network.mode: 'open' asked, the operator allows at most 'allowlist'" "$(field 3 text)"
expect_match "create_sandbox: a private range the operator did not allow is refused" \
	"network.allow\[0\]: '10.0.0.0/8' is not allowed" "$(field 4 text)"
expect_match "create_sandbox: a wildcard wider than the operator's is refused" \
	"network.allow\[0\]: '\*.test' is not allowed" "$(field 5 text)"
expect_match "create_sandbox: a narrower policy is accepted" '"mode": "allowlist"' \
	"$(sed -n 6p <<<"$OUT")"
expect_match "...with the agent's rule, the operator's deny rules and its own" \
	'"allow": \["www.wild.test"\], "deny": \["allowed.test"\]' "$(sed -n 6p <<<"$OUT")"

# the narrowed sandbox really is narrower
mcp "[[\"create_sandbox\", {\"network\": {\"allow\": [\"www.wild.test\"]}}],
      [\"run_command\", {\"sandbox_id\": \"@1.sandbox_id\",
        \"command\": \"$C http://allowed.test/; echo; $C -k https://www.wild.test/\"}]]"
expect_eq "a narrowed sandbox: allowed.test now 403, www.wild.test still 200" \
	"$(printf '403\n200')" "$(field 2 stdout)"

# ---- secrets: used by the agent's commands, never seen by the agent ----
mcp '[["run_command", {"command": "curl -sS -m 5 -H \"Authorization: Bearer $API_KEY\" https://api.test/echo-headers; echo; echo \"ph=$API_KEY\""}],
      ["create_sandbox", {"network": {"mode": "none"}}]]'
expect_match "the server received the real value" "Bearer $REAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
expect_match "the agent's result holds a placeholder of the same shape" 'ph=ghp_[A-Za-z0-9]{33}\\n' "$OUT"
expect_no_match "no tool result holds the value" "$REAL" "$OUT"
expect_match "a sandbox without network gets no secrets and is accepted" '"mode": "none"' "$(sed -n 2p <<<"$OUT")"
expect_no_match "the server's stderr does not hold the value" "$REAL" "$(cat "$T_TMP/mcp.err")"

# ---- --events: the record of every decision, in the file the operator names ----
EV=$T_TMP/events.jsonl
MCP_EXTRA="--events $EV" mcp '[["run_command", {"command": "'"$C"' http://denied.test/; echo; curl -sS -m 5 -H \"Authorization: Bearer $API_KEY\" https://api.test/echo-headers >/dev/null; echo done"}],
      ["create_sandbox", {"network": {"mode": "none"}}],
      ["destroy_sandbox", {"sandbox_id": "@2.sandbox_id"}]]'
expect_eq "--events: the session ended cleanly" 0 "$ST"
expect_eq "--events: the command ran" "$(printf '403\ndone')" "$(field 1 stdout)"
ev() { $PY -c "import json,sys
for l in open('$EV'):
    e = json.loads(l)
    if e.get('event') == sys.argv[1]: print(e.get(sys.argv[2], ''))" "$@"; }
expect_match "--events: the refused request, naming the host" "denied.test" \
	"$($PY -c "import json
for l in open('$EV'):
    e = json.loads(l)
    if e.get('event') == 'egress.connection' and e.get('decision') == 'deny': print(e['host'])")"
expect_match "--events: the secret's use, by name and host, never by value" "API_KEY api.test" \
	"$($PY -c "import json
for l in open('$EV'):
    e = json.loads(l)
    if e.get('event') == 'secret.used': print(e['secret'], e['host'])")"
expect_eq "--events: both sandboxes' creation" 2 "$(ev sandbox.created sandbox | wc -l)"
expect_eq "--events: both removed (destroy_sandbox, and the session's end)" \
	"$(printf 'deleted\ndeleted')" "$(ev sandbox.removed reason)"
expect_eq "--events: every line is JSON with a timestamp" "$(wc -l <"$EV")" \
	"$(ev_all() { $PY -c "import json
print(sum(1 for l in open('$EV') if 'ts' in json.loads(l)))"; }; ev_all)"
expect_no_match "--events: the file does not hold the secret's value" "$REAL" "$(cat "$EV")"

finish
