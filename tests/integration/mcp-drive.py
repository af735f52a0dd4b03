#!/usr/bin/python3
"""A minimal MCP stdio client for shell tests: mcp-drive.py SCRIPT -- PADDOCK mcp ARGS...

SCRIPT is a JSON array of [tool, arguments] pairs. The session is initialised, each tool is
called in turn (a string "@N.KEY" in the arguments becomes KEY of the Nth call's answer), and one line per call is printed: the call's structuredContent as JSON, or
{"isError": true, "text": ...} for a tool error, or {"rpcError": ...} for a protocol error.
The server's stdin is closed at the end and its exit status becomes this script's."""
import json
import subprocess
import sys

script = json.loads(sys.argv[1])
cmd = sys.argv[sys.argv.index("--") + 1:]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0


def request(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("the server closed stdout")
        msg = json.loads(line)
        if msg.get("id") == n:
            return msg


answers = []


def resolve(v):
    if isinstance(v, str) and v.startswith("@") and "." in v:
        i, key = v[1:].split(".", 1)
        return answers[int(i) - 1].get(key)
    if isinstance(v, dict):
        return {k: resolve(x) for k, x in v.items()}
    if isinstance(v, list):
        return [resolve(x) for x in v]
    return v


request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "mcp-drive", "version": "1"}})
p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
for tool, args in script:
    msg = request("tools/call", {"name": tool, "arguments": resolve(args)})
    if "error" in msg:
        answers.append({"rpcError": msg["error"]})
    elif msg["result"].get("isError"):
        answers.append({"isError": True, "text": msg["result"]["content"][0]["text"]})
    else:
        answers.append(msg["result"]["structuredContent"])
    print(json.dumps(answers[-1]))
    sys.stdout.flush()
p.stdin.close()
sys.exit(p.wait())
