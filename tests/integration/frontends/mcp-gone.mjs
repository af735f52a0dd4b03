// The cross-front-end scenario "a command that outlives its client" (test-frontends.sh)
// through the official MCP SDK client, as a client abandons a call: run_command starts
// ARGV[2] (a shell command that runs for a long time), the client aborts the call after a
// second and a half (the SDK sends notifications/cancelled), then asks whether the command
// still runs (/proc, while the session is still open) and ends the session.
// Usage: node mcp-gone.mjs PADDOCK MARKER [mcp args...]; one JSON line on stdout:
// {"scenario": "gone", "outcome": {"aborted", "left_running"}}.
import { Client } from '../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';
import fs from 'node:fs';

const [PADDOCK, MARKER, ...args] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// is `sleep MARKER` still there (a sandbox's processes are visible from the host's pid
// namespace; this script's own command line names MARKER too, so the whole of it is compared)
function running() {
	for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
		let cmd = '';
		try {
			cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
		} catch {
			continue;
		}
		if (cmd === `sleep\0${MARKER}\0`)
			return true;
	}
	return false;
}

const client = new Client({ name: 'paddock-frontends', version: '1' });
await client.connect(new StdioClientTransport({ command: PADDOCK, args: ['mcp', ...args], stderr: 'inherit' }));
const ac = new AbortController();
const call = client.callTool({ name: 'run_command', arguments: { command: `sleep ${MARKER}` } },
	undefined, { signal: ac.signal, timeout: 60_000 });
let started = false;
for (let i = 0; i < 100 && !started; i++) {
	await sleep(100);
	started = running();
}
ac.abort();
let aborted = false;
try {
	await call;
} catch {
	aborted = true;
}
let left = running();
for (let i = 0; i < 50 && left; i++) {
	await sleep(100);
	left = running();
}
process.stdout.write(JSON.stringify({ scenario: 'gone', outcome: { started, aborted, left_running: left } }) + '\n');
await client.close();
