#!/bin/bash
# paddock mcp's operator policy from a config file (docs/mcp.md): the spec, host directories
# an agent may name as workspace, the number of sandboxes; and a config that is wrong is
# refused before the server starts, naming what is wrong.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
DRIVE=$(dirname "$0")/mcp-drive.py
ALLOWED=$T_TMP/agents
mkdir -p "$ALLOWED/proj" "$T_TMP/secret-place"
echo "from the host" >"$ALLOWED/proj/readme.txt"
echo "not for agents" >"$T_TMP/secret-place/key"
ln -s "$T_TMP/secret-place" "$ALLOWED/escape"
chmod -R a+rwX "$ALLOWED"
give_to_user "$ALLOWED/proj"
chmod 755 "$T_TMP/secret-place"
cat >"$T_TMP/config.json" <<JSON
{"spec": {"limits": {"memory": "256M", "timeout_s": 20}, "env": {"TEAM": "blue"}},
 "allow_host_paths": ["$ALLOWED"], "max_sandboxes": 2, "max_output": "1K"}
JSON
chmod 644 "$T_TMP/config.json"

mcp() {
	OUT=$($PY "$DRIVE" "$1" -- "$PADDOCK" mcp --config "$T_TMP/config.json" "${@:2}" 2>"$T_TMP/err")
	ST=$?
}
field() { sed -n "${1}p" <<<"$OUT" | $PY -c "import json,sys; v=json.load(sys.stdin); print(v.get('$2', ''))"; }

mcp "[[\"run_command\", {\"command\": \"echo \$TEAM; yes | head -c 5000\"}],
      [\"create_sandbox\", {\"workspace\": \"$ALLOWED/proj\"}],
      [\"run_command\", {\"sandbox_id\": \"@2.sandbox_id\", \"command\": \"cat readme.txt; echo made here > new.txt\"}],
      [\"create_sandbox\", {}],
      [\"create_sandbox\", {\"limits\": {\"memory\": \"512M\"}}],
      [\"destroy_sandbox\", {\"sandbox_id\": \"@2.sandbox_id\"}],
      [\"create_sandbox\", {\"workspace\": \"$ALLOWED/escape\"}],
      [\"create_sandbox\", {\"workspace\": \"$T_TMP/secret-place\"}],
      [\"run_command\", {\"command\": \"sleep 5\", \"timeout_s\": 30}]]"
expect_eq "the session ended cleanly" 0 "$ST"
expect_match "config spec: the default sandbox has the operator's env" '^blue' "$(field 1 stdout)"
expect_eq "config max_output: 1K of output kept" "True 5005" \
	"$(sed -n 1p <<<"$OUT" | $PY -c 'import json,sys; v=json.load(sys.stdin); print(v["stdout_truncated"], v["stdout_bytes"])')"
expect_match "workspace under an allowed directory: accepted" "\"workspace\": \"$ALLOWED/proj\"" "$(sed -n 2p <<<"$OUT")"
expect_eq "...the sandbox sees the host directory at /workspace" "from the host" "$(field 3 stdout)"
expect_eq "...and what it writes there lands on the host" "made here" "$(cat "$ALLOWED/proj/new.txt" 2>&1)"
expect_match "max_sandboxes 2: the default one and one more, then refused" \
	"sandbox_id: this session has 2 sandboxes, the most the operator allows" "$(field 4 text)"
expect_match "config limits: more memory than the operator's is refused" \
	"limits.memory: 536870912 bytes asked, the operator allows at most 268435456" "$(field 5 text)"
expect_match "destroy_sandbox frees a place" '"destroyed": true' "$(sed -n 6p <<<"$OUT")"
expect_match "a symlink out of the allowed directory is refused" \
	"workspace: '.*escape' is not under a directory the operator allows" "$(field 7 text)"
expect_match "a directory outside is refused" "workspace: '.*secret-place' is not under" "$(field 8 text)"
expect_match "timeout_s over the operator's limits.timeout_s is refused" \
	"timeout_s: 30 s asked, the sandbox allows at most 20 s" "$(field 9 text)"

# without --allow-host-path, no workspace at all
OUT=$($PY "$DRIVE" '[["create_sandbox", {"workspace": "/tmp"}]]' -- "$PADDOCK" mcp 2>/dev/null)
expect_match "no allowed directory: workspace refused, saying how to allow one" \
	"the operator allows no host directory \(paddock mcp --allow-host-path DIR\)" "$OUT"

# a wrong config never starts a server
bad() {
	printf '%s' "$2" >"$T_TMP/bad.json"
	chmod 644 "$T_TMP/bad.json"
	out=$("$PADDOCK" mcp --config "$T_TMP/bad.json" </dev/null 2>&1)
	st=$?
	expect_eq "bad config ($1): exit 125" 125 "$st"
	expect_match "bad config ($1): the message names it" "$3" "$out"
}
bad "unknown key" '{"max_sandbox": 3}' "unknown key 'max_sandbox'"
bad "spec field" '{"spec": {"limits": {"memory": "lots"}}}' "spec.limits.memory"
bad "not JSON" '{"spec": ' "--config .*bad.json"
bad "host path" '{"allow_host_paths": ["/no/such/dir"]}' "allow_host_paths\[0\]"
bad "size" '{"max_output": "-1K"}' "max_output: expected a size"
out=$("$PADDOCK" mcp --max-sandboxes 0 </dev/null 2>&1)
expect_match "a flag out of range is refused" "max-sandboxes: expected a number from 1 to 1024" "$out"
out=$("$PADDOCK" mcp --http 0.0.0.0:18931 </dev/null 2>&1)
expect_match "HTTP on a non-loopback address without a token is refused" "give --http-token-file" "$out"

finish
