#!/bin/bash
# paddock mcp end to end (docs/mcp.md), driven by the official MCP TypeScript SDK client:
# mcp/client.mjs starts real `paddock mcp` servers and checks the handshake, every tool, the
# operator's policy, JSON-RPC errors (with a raw peer), cancellation, several sandboxes, and
# that nothing outlives a session (stdin EOF, SIGTERM, SIGINT, SIGHUP, SIGKILL), then
# `--connect` to a paddockd. run.sh stages tests/integration/mcp beside this script, npm
# packages included (dev/test runs `npm ci` there). Each line the client prints becomes a
# check here.
. "$(dirname "$0")/lib.sh"

MCP=$(cd "$(dirname "$0")" && pwd)/mcp

command -v node >/dev/null || unavailable "node is not installed (dev/deps --test installs it)"
[ "$(node -p 'process.versions.node.split(".")[0] >= 18')" = true ] ||
	unavailable "node $(node --version) is older than 18"
need_npm_package "$MCP" @modelcontextprotocol/sdk

"$PADDOCK" mcp --help >/dev/null 2>&1
expect_eq "paddock mcp --help exits 0" 0 "$?"

client_checks env PADDOCK="$PADDOCK" PADDOCKD="${PADDOCKD:-}" T_TMP="$T_TMP" node "$MCP/client.mjs"
if [ "$T_FAILED" -gt 0 ]; then
	diag "client.mjs's stderr and the servers' (last 60 lines):"
	tail -n 60 "$T_TMP/client.log" | sed 's/^/# /'
fi
finish
