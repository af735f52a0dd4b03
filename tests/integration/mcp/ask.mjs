// `paddock mcp` asks the person (network.unlisted "ask", docs/mcp.md "Asking the person"),
// driven by the official MCP TypeScript SDK client, which implements elicitation: a command's
// connection to a host no rule names becomes an elicitation/create request; the answer the
// client's handler gives (accept with a decision, decline, cancel) decides; a client without
// the capability, or one that never answers, gets today's deny. Embedded, and with --connect
// to a paddockd when PADDOCKD and SOCK are set.
//
// test-egress-ask.sh runs it inside the test's own network (netns-wrap.sh) with PADDOCK,
// EGRESS_DIR and T_TMP set. One line per check, "ok - DESC" or "not ok - DESC" (then "# "
// diagnostics); it exits 0 when it ran to its end, whatever the checks said.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import http from 'node:http';
import { inspect } from 'node:util';

const PADDOCK = process.env.PADDOCK;
const HOSTS = `${process.env.EGRESS_DIR}/hosts`;
const SOCK = process.env.SOCK || '';

const out = (s) => process.stdout.write(s + '\n');
const show = (v) => inspect(v, { depth: 6, breakLength: Infinity, maxStringLength: 600 });
const clean = (d) => String(d).replace(/[#\n]/g, ' ');
function check(desc, cond, ...d) {
	out(`${cond ? 'ok' : 'not ok'} - ${clean(desc)}`);
	if (!cond) for (const l of d) for (const x of String(l).split('\n')) out('# ' + x);
	return cond;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A session: `elicit` is the client's handler (undefined: the client declares no elicitation).
async function session(label, elicit, extra = []) {
	const args = ['mcp', '--net', 'ask', '--resolve-hosts', HOSTS, '--ask-timeout', '4',
		'--allow', 'allowed.test', ...extra];
	const transport = new StdioClientTransport({ command: PADDOCK, args, stderr: 'pipe' });
	let stderr = '';
	transport.stderr?.on('data', (d) => { stderr += d; });
	const client = new Client({ name: 'paddock-ask-test', version: '1.0.0' },
		{ capabilities: elicit ? { elicitation: {} } : {} });
	const asked = [];
	if (elicit)
		client.setRequestHandler(ElicitRequestSchema, async (req, extra2) => {
			asked.push(req.params);
			return elicit(req.params, extra2);
		});
	await client.connect(transport, { timeout: 20000 });
	const run = async (command) => {
		const r = await client.callTool({ name: 'run_command', arguments: { command } }, undefined,
			{ timeout: 60000 });
		return r.structuredContent ?? { stdout: show(r) };
	};
	return { client, asked, run, close: () => client.close(), stderr: () => stderr, label };
}

const curl = (url) => `curl -sS -m 20 -o /dev/null -w '%{http_code}\\n' ${url}; ` +
	`curl -sS -m 20 ${url} | head -c 300`;

async function scenarios(label, extra) {
	// ---- accept, allow once: the held connection goes through; the next asks again ----
	let s = await session(label, async () => ({ action: 'accept', content: { decision: 'allow_once' } }), extra);
	let r = await run2(s, 'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" http://api.test/; ' +
		'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" http://api.test/');
	check(`${label}: allow once: both connections through (each asked)`, r.stdout === '200\n200\n', show(r));
	check(`${label}: the client was asked twice`, s.asked.length === 2, show(s.asked));
	const p = s.asked[0] || {};
	check(`${label}: the request is form mode with a decision to pick`,
		(p.mode === undefined || p.mode === 'form') && p.requestedSchema?.type === 'object' &&
		p.requestedSchema?.required?.includes('decision'), show(p));
	const d = p.requestedSchema?.properties?.decision || {};
	const choices = d.oneOf ? d.oneOf.map((o) => o.const) : d.enum;
	check(`${label}: the choices are allow_once, allow_always and deny`,
		JSON.stringify(choices) === '["allow_once","allow_always","deny"]', show(d));
	check(`${label}: the message names the host, port and sandbox`,
		/api\.test:80/.test(p.message) && /sb_[a-z0-9]+/.test(p.message) && /within \d+ s/.test(p.message), show(p.message));
	await s.close();

	// ---- accept, allow always: the rule is added; the next connection is not asked ----
	s = await session(label, async () => ({ action: 'accept', content: { decision: 'allow_always' } }), extra);
	r = await run2(s, 'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" http://api.test/; ' +
		'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" http://api.test/');
	check(`${label}: allow always: both through`, r.stdout === '200\n200\n', show(r));
	check(`${label}: ...asked once only (the rule decides the second)`, s.asked.length === 1, show(s.asked));
	if (SOCK) {
		// paddockd's view of the sandbox: the rule is in its policy
		const list = await api('GET', '/v1/sandboxes');
		const ids = (list.sandboxes || []).map((x) => x.id);
		const nets = await Promise.all(ids.map((id) => api('GET', `/v1/sandboxes/${id}/network`)));
		if (label === '--connect')
			check(`${label}: ...and GET .../network shows the rule api.test:80`,
				nets.some((n) => (n.network?.allow || []).includes('api.test:80')), show(nets));
	}
	await s.close();

	// ---- accept, deny; decline; cancel; an answer that is no decision: each a 403 ----
	for (const [what, answer] of [['deny', { action: 'accept', content: { decision: 'deny' } }],
		['decline', { action: 'decline' }], ['cancel', { action: 'cancel' }],
		['an unknown decision', { action: 'accept', content: { decision: 'yes please' } }]]) {
		s = await session(label, async () => answer, extra);
		r = await run2(s, curl('http://api.test/'));
		check(`${label}: ${what}: 403`, /^403\n/.test(r.stdout), show(r));
		check(`${label}: ${what}: the 403 says it was answered deny, and by whom`,
			/answered deny \(by (mcp|api:[a-z]+): paddock-ask-test 1\.0\.0, elicitation/.test(r.stdout), show(r));
		await s.close();
	}

	// ---- nobody answers: the decision times out; the request is cancelled ----
	let cancelled = false;
	s = await session(label, (params, extra2) => new Promise((res) => {
		extra2.signal.addEventListener('abort', () => { cancelled = true; res({ action: 'cancel' }); });
	}), extra);
	const t0 = Date.now();
	r = await run2(s, curl('http://api.test/'));
	check(`${label}: no answer: 403 after the ask timeout`, /^403\n/.test(r.stdout) && Date.now() - t0 >= 3500, show(r), `${Date.now() - t0} ms`);
	check(`${label}: ...saying nobody answered`, /nobody answered within 4 s/.test(r.stdout), show(r));
	await sleep(200);
	check(`${label}: ...and the client's request was cancelled`, cancelled);
	await s.close();

	// ---- a client without elicitation: today's deny, at once ----
	s = await session(label, undefined, extra);
	const t1 = Date.now();
	r = await run2(s, curl('http://api.test/'));
	check(`${label}: no elicitation: 403 at once`, /^403\n/.test(r.stdout) && Date.now() - t1 < 3000, show(r));
	check(`${label}: ...saying the client cannot ask`, /cannot ask a person/.test(r.stdout), show(r));
	r = await run2(s, curl('http://allowed.test/'));
	check(`${label}: ...what a rule allows still goes through`, /^200\n/.test(r.stdout), show(r));
	await s.close();

	// ---- the SSRF wall: loopback and private addresses are never asked about ----
	s = await session(label, async () => ({ action: 'accept', content: { decision: 'allow_always' } }), extra);
	const px = 'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" --noproxy "" -x http://127.0.0.1:3128';
	r = await run2(s, `${px} http://127.0.0.1:8099/; ${px} http://169.254.169.254/; ${px} http://private.test/`);
	check(`${label}: loopback, metadata: 403 without asking; a name of a private address: asked, then refused`,
		r.stdout === '403\n403\n403\n' && s.asked.length === 1 && /private\.test/.test(s.asked[0]?.message), show(r), show(s.asked));
	await s.close();
}

// paddockd's API on its unix socket: the JSON answer
function api(method, path) {
	return new Promise((res) => {
		const req = http.request({ socketPath: SOCK, method, path }, (r) => {
			let body = '';
			r.on('data', (d) => { body += d; });
			r.on('end', () => { try { res(JSON.parse(body)); } catch { res({ raw: body }); } });
		});
		req.on('error', (e) => res({ error: String(e) }));
		req.end();
	});
}

async function run2(s, command) {
	try {
		return await s.run(command);
	} catch (e) {
		return { stdout: `error: ${e.message}`, stderr: s.stderr() };
	}
}

if (!PADDOCK) {
	out('not ok - PADDOCK names the paddock binary');
	process.exit(0);
}
try {
	await scenarios('embedded', []);
	if (SOCK) await scenarios('--connect', ['--connect', SOCK]);
} catch (e) {
	check('the scenarios ran to their end', false, e.stack || String(e));
}
process.exit(0);
