// `paddock mcp` end to end, driven by the official MCP TypeScript SDK client (docs/mcp.md):
// the handshake and the tool list (each schema compiled with Ajv), every tool on the default
// sandbox, several sandboxes, the operator's policy, JSON-RPC errors and bounds (with a raw
// peer, for what the SDK never sends), cancellation, concurrent calls, the end of a session
// (stdin EOF, SIGTERM, SIGINT, SIGHUP, SIGKILL), Streamable HTTP (--http) and --connect to a
// paddockd. Every tool result also goes through the SDK's own check of structuredContent
// against the tool's outputSchema.
//
// test-mcp.sh runs it with PADDOCK (the binary under test), PADDOCKD and T_TMP (a scratch
// directory of the test's own) in the environment. It prints one line per check,
// "ok - DESC" or "not ok - DESC" (then "# " diagnostics), which test-mcp.sh numbers into TAP;
// it exits 0 when it ran to its end, whatever the checks said.
//
// Processes are followed through /proc: the descendants of a server (its sandboxes' inits
// and everything in them) are listed while it runs, and each must be gone when it should
// be, so that other work on the machine never counts.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { inspect, isDeepStrictEqual } from 'node:util';

const PADDOCK = process.env.PADDOCK;
const PADDOCKD = process.env.PADDOCKD || '';
const TMP = process.env.T_TMP || '/tmp';
if (!PADDOCK) {
	console.log('not ok - PADDOCK names the paddock binary');
	process.exit(1);
}

// ---- the contract, from docs/mcp.md --------------------------------------------------------
const TOOLS = {
	create_sandbox: { args: ['network', 'limits', 'env', 'workspace'], required: [],
		result: ['sandbox_id', 'network', 'limits', 'workspace'] },
	destroy_sandbox: { args: ['sandbox_id'], required: ['sandbox_id'], result: ['sandbox_id', 'destroyed'] },
	list_sandboxes: { args: [], required: [], result: ['sandboxes'] },
	pause_sandbox: { args: ['sandbox_id'], required: ['sandbox_id'], result: ['sandbox_id', 'state'] },
	resume_sandbox: { args: ['sandbox_id'], required: ['sandbox_id'], result: ['sandbox_id', 'state'] },
	run_command: { args: ['command', 'cwd', 'env', 'stdin', 'timeout_s', 'sandbox_id'],
		required: ['command'], result: 'exec' },
	run_code: { args: ['language', 'code', 'context', 'stdin', 'env', 'timeout_s', 'sandbox_id'],
		required: ['language', 'code'],
		result: ['sandbox_id', 'language', 'context', 'execution_count', 'stdout', 'stderr', 'results', 'error', 'timed_out'] },
	write_file: { args: ['path', 'content', 'encoding', 'executable', 'sandbox_id'],
		required: ['path', 'content'], result: ['sandbox_id', 'path', 'size'] },
	read_file: { args: ['path', 'offset', 'max_bytes', 'sandbox_id'], required: ['path'],
		result: ['sandbox_id', 'path', 'size', 'offset', 'next_offset', 'encoding', 'content', 'truncated'] },
	list_files: { args: ['path', 'depth', 'sandbox_id'], required: [],
		result: ['sandbox_id', 'path', 'entries'] },
	start_process: { args: ['command', 'cwd', 'env', 'timeout_s', 'sandbox_id'], required: ['command'],
		result: ['sandbox_id', 'process_id', 'pid'] },
	// process ids are the session's: the process tools take no sandbox_id (the table's rows)
	read_process_output: { args: ['process_id', 'wait_s'], required: ['process_id'],
		result: ['sandbox_id', 'process_id', 'running', 'stdout', 'stderr', 'stdout_dropped',
			'stderr_dropped', 'exit_code', 'reason', 'report'] },
	stop_process: { args: ['process_id', 'signal'], required: ['process_id'],
		result: ['sandbox_id', 'process_id', 'signal'] },
};
// what only reads: a client may approve these without asking, so no other tool may claim it
const READ_ONLY = ['list_sandboxes', 'read_file', 'list_files', 'read_process_output'];
const EXEC_RESULT = ['sandbox_id', 'exit_code', 'reason', 'signal', 'stdout', 'stderr', 'stdout_truncated',
	'stderr_truncated', 'stdout_bytes', 'stderr_bytes', 'report'];

// ---- output ---------------------------------------------------------------------------------
const out = (s) => process.stdout.write(s + '\n');
const show = (v) => inspect(v, { depth: 8, breakLength: Infinity, maxStringLength: 400, maxArrayLength: 40 });
const clean = (d) => String(d).replace(/[#\n]/g, ' ');
function diag(...lines) {
	for (const l of lines) for (const x of String(l).split('\n')) out('# ' + x);
}
function pass(desc) { out(`ok - ${clean(desc)}`); return true; }
function fail(desc, ...d) { out(`not ok - ${clean(desc)}`); diag(...d); return false; }
function skip(desc, why) { out(`ok - ${clean(desc)} # SKIP ${clean(why)}`); }
function check(desc, cond, ...d) { return cond ? pass(desc) : fail(desc, ...d); }
function eq(desc, expected, got) {
	return check(desc, isDeepStrictEqual(got, expected), `expected: ${show(expected)}`, `     got: ${show(got)}`);
}
function match(desc, re, got) {
	return check(desc, typeof got === 'string' && re.test(got), `expected to match: ${re}`, `got: ${show(got)}`);
}
const pick = (o, ...keys) => Object.fromEntries(keys.map((k) => [k, o?.[k]]));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- processes --------------------------------------------------------------------------------
const live = new Set(); // every child this script started, killed if a scenario leaves one
function track(p) {
	live.add(p);
	p.on('exit', () => live.delete(p));
	return p;
}
function procs() {
	const m = new Map();
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) continue;
		try {
			const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
			const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
			let args = '';
			try { args = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' '); } catch { }
			m.set(+d, { pid: +d, state: f[0], ppid: +f[1], start: f[19],
				comm: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')), args });
		} catch { /* gone meanwhile */ }
	}
	return m;
}
// every live process below pid (not pid itself)
function descendants(pid) {
	const all = [...procs().values()];
	const found = [];
	const queue = [pid];
	while (queue.length) {
		const p = queue.pop();
		for (const c of all) if (c.ppid === p) { found.push(c); queue.push(c.pid); }
	}
	return found.filter((p) => p.state !== 'Z');
}
// those of `list` still alive (same pid, same start time, not a zombie)
function alive(list) {
	const now = procs();
	return list.filter((p) => { const q = now.get(p.pid); return q && q.start === p.start && q.state !== 'Z'; });
}
async function waitFor(fn, ms, step = 50) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v || Date.now() > end) return v;
		await sleep(step);
	}
}
const waitGone = async (list, ms = 5000) => {
	await waitFor(() => alive(list).length === 0, ms);
	return alive(list);
};
const inits = (list) => list.filter((p) => p.comm === 'paddock-init');
function exited(p, ms) {
	if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve(true);
	return new Promise((res) => {
		const t = setTimeout(() => res(false), ms);
		p.once('exit', () => { clearTimeout(t); res(true); });
	});
}
const fmt = (list) => list.map((p) => (typeof p === 'string' ? p : `${p.pid} ${p.comm}: ${p.args}`)).join('\n') || '(none)';

// ---- JSON Schema -----------------------------------------------------------------------------
// MCP's default dialect is 2020-12; a schema may name draft-07 instead. Formats are not
// checked (they are annotations here); unknown keywords are errors (Ajv's strict schema).
function schemaProblems(what, schema) {
	if (!schema || typeof schema !== 'object') return [`${what}: missing`];
	const dialect = String(schema.$schema || '');
	const ajv = /draft-0[4-7]/.test(dialect)
		? new Ajv({ allErrors: true, validateFormats: false, logger: false })
		: new Ajv2020({ allErrors: true, validateFormats: false, logger: false });
	const p = [];
	if (schema.type !== 'object') p.push(`${what}: type is ${show(schema.type)}, not "object"`);
	try {
		if (!ajv.validateSchema(schema)) p.push(`${what}: not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
		ajv.compile(schema);
	} catch (e) {
		p.push(`${what}: does not compile: ${e.message}`);
	}
	return p;
}
function toolProblems(t) {
	const spec = TOOLS[t.name];
	const p = [];
	if (typeof t.description !== 'string' || !t.description.trim()) p.push('no description');
	if (typeof t.title !== 'string' || !t.title.trim()) p.push('no title');
	if (typeof t.annotations !== 'object' || !t.annotations) p.push('no annotations');
	else if ((t.annotations.readOnlyHint === true) !== READ_ONLY.includes(t.name)) {
		p.push(`annotations.readOnlyHint is ${t.annotations.readOnlyHint}`);
	}
	p.push(...schemaProblems('inputSchema', t.inputSchema), ...schemaProblems('outputSchema', t.outputSchema));
	const props = Object.keys(t.inputSchema?.properties || {});
	const missing = spec.args.filter((a) => !props.includes(a));
	if (missing.length) p.push(`inputSchema lacks documented arguments ${missing.join(', ')} (has ${props.join(', ')})`);
	const req = t.inputSchema?.required || [];
	const notReq = spec.required.filter((a) => !req.includes(a));
	if (notReq.length) p.push(`inputSchema does not require ${notReq.join(', ')} (requires ${show(req)})`);
	const outProps = Object.keys(t.outputSchema?.properties || {});
	const res = spec.result === 'exec' ? EXEC_RESULT : spec.result;
	const outMissing = res.filter((a) => !outProps.includes(a));
	if (outMissing.length) p.push(`outputSchema lacks documented result fields ${outMissing.join(', ')}`);
	return p;
}

// ---- run_code's code interpreter: state between calls, contexts, plots as images ----------------
async function codeInterpreter(s) {
	const code = async (args) => (await s.try('run_code', { language: 'python', ...args }));
	let r = await code({ code: 'n = 6 * 7\nprint("set")' });
	let sc = okResult('run_code python: a result', r);
	if (sc) eq('run_code python: stdout, the count, no error', { stdout: 'set\n', error: null }, pick(sc, 'stdout', 'error'));
	r = await code({ code: 'n' });
	sc = okResult('run_code python keeps state: a result', r);
	if (sc) {
		eq('run_code python keeps state: the last call\'s variable is the main result',
			[{ is_main_result: true, text: '42' }], sc.results);
		check('run_code python: execution_count counts', Number.isInteger(sc.execution_count) && sc.execution_count >= 2, show(sc));
	}
	r = await code({ code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()' });
	sc = okResult('run_code matplotlib: a result', r);
	const images = (r?.content || []).filter((c) => c.type === 'image');
	eq('run_code matplotlib: one image content block, image/png', ['image/png'], images.map((c) => c.mimeType));
	const png = Buffer.from(images[0]?.data || '', 'base64');
	eq('run_code matplotlib: the image is a PNG', '89504e470d0a1a0a', png.subarray(0, 8).toString('hex'));
	check('run_code matplotlib: a picture of some size', png.length > 5000, `${png.length} bytes`);
	if (sc) eq('run_code matplotlib: the result points at the image block', [{ mime_type: 'image/png', content_index: 1 }], sc.results?.[0]?.images);
	r = await code({ code: 'def f():\n    raise ValueError("bad value")\nf()' });
	sc = okResult('run_code python exception: a result, not a tool error', r);
	if (sc) {
		eq('run_code python exception: name and value', { name: 'ValueError', value: 'bad value' }, pick(sc.error, 'name', 'value'));
		match('run_code python exception: the traceback names the line', /raise ValueError/, sc.error?.traceback);
	}
	r = await code({ code: 'n = "in a"', context: 'a' });
	okResult('run_code context a: a result', r);
	r = await code({ code: 'n', context: 'a' });
	eq('run_code context a: its own state', '\'in a\'', r?.structuredContent?.results?.[0]?.text);
	r = await code({ code: 'n' });
	eq('run_code: the default context is untouched by context a', '42', r?.structuredContent?.results?.[0]?.text);
	toolError('run_code: a bash run in the python context a is refused, naming context',
		await s.try('run_code', { language: 'bash', code: 'echo', context: 'a' }), /context/);
	toolError('run_code: a bad context name is refused, naming context',
		await s.try('run_code', { language: 'python', code: '1', context: '../x' }), /context/);
	r = await s.try('run_code', { language: 'bash', code: 'cd /tmp; export K=7' });
	okResult('run_code bash: a result', r);
	eq('run_code bash keeps state: cwd and variables', '/tmp 7\n',
		(await s.try('run_code', { language: 'bash', code: 'echo "$PWD $K"' }))?.structuredContent?.stdout);
	let t0 = Date.now();
	r = await code({ code: 'import time\ntime.sleep(60)', timeout_s: 1 });
	const secs = (Date.now() - t0) / 1000;
	sc = okResult('run_code timeout_s 1: a result', r);
	if (sc) eq('run_code timeout_s 1: timed out', { timed_out: true, error: 'Timeout' }, { timed_out: sc.timed_out, error: sc.error?.name });
	check(`run_code timeout_s 1: over within 10 s (took ${secs.toFixed(1)} s)`, secs < 10);
	eq('run_code after a timeout: the context keeps its state', '42', (await code({ code: 'n' }))?.structuredContent?.results?.[0]?.text);
}

// ---- an SDK client session --------------------------------------------------------------------
const stats = { results: 0, inconsistent: [] };
const textOf = (r) => (r?.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function session(args, { pipeStderr = false } = {}) {
	const transport = new StdioClientTransport({
		command: PADDOCK, args: ['mcp', ...args], stderr: pipeStderr ? 'pipe' : 'inherit',
	});
	const s = { stderr: '', errors: [], negotiated: null };
	if (pipeStderr) {
		transport.stderr.on('data', (d) => { s.stderr += d; process.stderr.write(d); });
	}
	// the SDK hands the negotiated revision to transports that want it (HTTP ones)
	transport.setProtocolVersion = (v) => { s.negotiated = v; };
	const client = new Client({ name: 'paddock-integration-test', version: '1.0.0' });
	client.onerror = (e) => s.errors.push(e);
	s.client = client;
	s.transport = transport;
	try {
		await client.connect(transport, { timeout: 20000 });
	} catch (e) {
		e.serverStderr = s.stderr;
		throw e;
	} finally {
		// the child (private to the transport): its pid, its exit, its stdin
		s.proc = transport._process;
		if (s.proc) track(s.proc);
	}
	s.pid = transport.pid;
	// listTools also makes the SDK check every later structuredContent against outputSchema
	s.tools = (await client.listTools(undefined, { timeout: 20000 })).tools;
	// a tool call; a protocol error or an SDK-side failure (bad structuredContent) throws
	s.call = async (name, a = {}, opts = {}) => {
		const r = await client.callTool({ name, arguments: a }, undefined, { timeout: 30000, ...opts });
		stats.results++;
		if (r.isError !== true) {
			const texts = (r.content || []).filter((c) => c.type === 'text');
			let parsed;
			try { parsed = JSON.parse(texts[0]?.text); } catch { }
			// the text block first; run_code's pictures follow it as image blocks
			const extra = r.content.slice(1);
			if (texts.length !== 1 || r.content[0]?.type !== 'text' || !isDeepStrictEqual(parsed, r.structuredContent) ||
				!extra.every((c) => name === 'run_code' && c.type === 'image')) {
				stats.inconsistent.push(`${name}: ${show(r)}`);
			}
		}
		return r;
	};
	// the same, a throw turned into { thrown }
	s.try = (name, a = {}, opts = {}) => s.call(name, a, opts).catch((e) => ({ thrown: e }));
	s.close = async () => { await client.close().catch(() => { }); };
	// ends the session by closing stdin: the server must exit 0 on its own (a sanitizer's
	// leak report would make it 1)
	s.end = async (what) => {
		s.proc.stdin.end();
		const done = await exited(s.proc, 5000);
		check(`${what}: stdin closed, the server exits 0 within 5 s`, done && s.proc.exitCode === 0,
			`exited: ${done}, code ${s.proc.exitCode}, signal ${s.proc.signalCode}`);
		await s.close();
	};
	return s;
}

// a tool error: a result with isError and a message matching re
function toolError(desc, r, re) {
	const ok = r && !r.thrown && r.isError === true && re.test(textOf(r));
	return check(desc, ok, `expected a result with isError: true and a message matching ${re}`,
		`got: ${r?.thrown ? 'a thrown ' + show(r.thrown) : show(r)}`);
}
// a successful tool result's structuredContent, or a failed check and null
function okResult(desc, r) {
	if (r && !r.thrown && r.isError !== true && r.structuredContent) return r.structuredContent;
	fail(desc, `the call failed: ${r?.thrown ? show(r.thrown) : show(r)}`);
	return null;
}

// ---- a raw JSON-RPC peer, for what the SDK never sends ----------------------------------------
class Raw {
	constructor(args) {
		this.p = track(spawn(PADDOCK, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'inherit'] }));
		this.p.stdin.on('error', () => { });
		this.buf = '';
		this.queue = [];
		this.waiters = [];
		this.all = [];
		this.p.stdout.setEncoding('utf8');
		this.p.stdout.on('data', (d) => {
			this.buf += d;
			let i;
			while ((i = this.buf.indexOf('\n')) >= 0) {
				const line = this.buf.slice(0, i);
				this.buf = this.buf.slice(i + 1);
				let m;
				try { m = JSON.parse(line); } catch { m = { unparsable: line }; }
				this.all.push(m);
				const w = this.waiters.shift();
				if (w) w(m); else this.queue.push(m);
			}
		});
		// no more answers once stdout ends
		this.p.stdout.on('end', () => {
			this.ended = true;
			for (const w of this.waiters.splice(0)) w(null);
		});
	}
	send(x) { this.p.stdin.write((typeof x === 'string' ? x : JSON.stringify(x)) + '\n'); }
	// the next message, or null after ms
	next(ms = 10000) {
		if (this.queue.length) return Promise.resolve(this.queue.shift());
		if (this.ended) return Promise.resolve(null);
		return new Promise((res) => {
			const w = (m) => { clearTimeout(t); res(m); };
			const t = setTimeout(() => { this.waiters.splice(this.waiters.indexOf(w), 1); res(null); }, ms);
			this.waiters.push(w);
		});
	}
	ask(x, ms) { this.send(x); return this.next(ms); }
	// closes stdin: true when the server then exits 0 within ms
	async end(ms = 5000) { this.p.stdin.end(); return await exited(this.p, ms) && this.p.exitCode === 0; }
}
const INIT = (id, v) => ({ jsonrpc: '2.0', id, method: 'initialize',
	params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
const errOf = (m) => ({ id: m?.id, code: m?.error?.code });

// ---- scenarios -------------------------------------------------------------------------------
async function scenario(name, fn, ms = 60000) {
	const t0 = Date.now();
	let timer;
	try {
		await Promise.race([fn(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`still running after ${ms / 1000} s`)), ms); })]);
	} catch (e) {
		fail(`${name}: ran to its end`, e?.stack || show(e));
	} finally {
		clearTimeout(timer);
	}
	for (const p of live) if (p.exitCode === null && p.signalCode === null) { diag(`${name}: killing left-over child ${p.pid}`); p.kill('SIGKILL'); }
	diag(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function basics() {
	const s = await session([]);
	pass('initialize succeeds');
	const info = s.client.getServerVersion();
	eq('serverInfo.name is paddock', 'paddock', info?.name);
	check('serverInfo.version is a non-empty string', typeof info?.version === 'string' && info.version !== '', show(info));
	check('server capabilities include tools', !!s.client.getServerCapabilities()?.tools, show(s.client.getServerCapabilities()));
	eq('negotiated protocol revision is 2025-11-25', '2025-11-25', s.negotiated);
	eq('tools/list: exactly the tools of docs/mcp.md', Object.keys(TOOLS).sort(), s.tools.map((t) => t.name).sort());
	for (const name of Object.keys(TOOLS)) {
		const t = s.tools.find((x) => x.name === name);
		if (!t) continue;
		const p = toolProblems(t);
		check(`tool ${name}: title, description, annotations; inputSchema and outputSchema valid JSON Schemas of objects with the documented fields`, p.length === 0, ...p);
	}

	let r = await s.try('list_sandboxes');
	let sc = okResult('list_sandboxes', r);
	if (sc) eq('list_sandboxes before anything else: none (the default sandbox is made on first need)', [], sc.sandboxes);

	// ---- run_command ----
	r = await s.try('run_command', { command: 'echo hello; echo err >&2; exit 3' });
	sc = okResult('run_command: a result', r);
	if (sc) {
		eq('run_command: a non-zero exit is no tool error', false, r.isError ?? false);
		eq('run_command: exit_code 3, reason exited, no signal', { exit_code: 3, reason: 'exited', signal: null },
			pick(sc, 'exit_code', 'reason', 'signal'));
		eq('run_command: stdout and stderr', { stdout: 'hello\n', stderr: 'err\n' }, pick(sc, 'stdout', 'stderr'));
		eq('run_command: byte counts, nothing truncated',
			{ stdout_bytes: 6, stderr_bytes: 4, stdout_truncated: false, stderr_truncated: false },
			pick(sc, 'stdout_bytes', 'stderr_bytes', 'stdout_truncated', 'stderr_truncated'));
		check('run_command: a sandbox_id and the report (report.md)', typeof sc.sandbox_id === 'string' && sc.sandbox_id !== '' &&
			sc.report?.reason === 'exited' && sc.report?.exit_code === 3, show(sc));
		let parsed;
		try { parsed = JSON.parse(r.content?.[0]?.text); } catch { }
		eq('run_command: the one text block is the structuredContent as JSON', sc, parsed);
	}
	const DEFAULT_ID = sc?.sandbox_id;
	const run = async (command, extra = {}) => (await s.call('run_command', { command, ...extra })).structuredContent ?? {};

	// ---- isolation ----
	eq('sandbox: the command runs as uid 1000', '1000\n', (await run('id -u')).stdout);
	eq('sandbox: hostname is sandbox', 'sandbox\n', (await run('hostname')).stdout);
	eq('sandbox: no network interface but lo', 'lo\n', (await run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout);
	eq("sandbox: the host's temp dirs are not there", 'hidden\n', (await run(`test -e '${TMP}' && echo visible || echo hidden`)).stdout);
	eq('run_command: the working directory is /workspace', '/workspace\n', (await run('pwd')).stdout);
	eq('run_command: cwd', '/tmp\n', (await run('pwd', { cwd: '/tmp' })).stdout);
	eq('run_command: HOME is /home/user', '/home/user\n', (await run('echo "$HOME"')).stdout);
	eq('run_command: env', 'hi there\n', (await run('echo "$GREETING"', { env: { GREETING: 'hi there' } })).stdout);
	eq('run_command: stdin', 'from stdin', (await run('cat', { stdin: 'from stdin' })).stdout);
	eq('run_command: bytes that are not UTF-8 become U+FFFD', 'a\uFFFDb', (await run("printf 'a\\377b'")).stdout);

	// ---- files ----
	r = await s.try('run_code', { language: 'python', code: "open('out.txt', 'w').write('42')\n" });
	sc = okResult('run_code python: a result', r);
	if (sc) eq('run_code python: no error', { error: null, language: 'python' }, pick(sc, 'error', 'language'));
	r = await s.try('read_file', { path: 'out.txt' });
	sc = okResult('read_file: a result', r);
	if (sc) {
		eq('read_file: what the python code wrote, as utf-8', { content: '42', encoding: 'utf-8', size: 2, offset: 0, truncated: false },
			pick(sc, 'content', 'encoding', 'size', 'offset', 'truncated'));
		eq('read_file: a relative path resolves against /workspace', '/workspace/out.txt', sc.path);
		eq('read_file: the default sandbox', DEFAULT_ID, sc.sandbox_id);
	}
	r = await s.try('write_file', { path: 'notes/hello.txt', content: 'hi from write_file\n' });
	sc = okResult('write_file: a result (parent directories made)', r);
	if (sc) eq('write_file: path and size', { path: '/workspace/notes/hello.txt', size: 19 }, pick(sc, 'path', 'size'));
	eq('write_file: the sandbox sees the file', 'hi from write_file\n', (await run('cat /workspace/notes/hello.txt')).stdout);
	const bytes = Buffer.from([0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x00, 0x0a]);
	r = await s.try('write_file', { path: '/workspace/bin.dat', content: bytes.toString('base64'), encoding: 'base64' });
	sc = okResult('write_file base64: a result', r);
	if (sc) eq('write_file base64: size', 8, sc.size);
	eq('write_file base64: the bytes in the sandbox', '0001 7f80 feff 000a', (await run("od -An -tx1 bin.dat | tr -d ' \\n' | sed 's/..../& /g;s/ $//'")).stdout);
	r = await s.try('read_file', { path: 'bin.dat' });
	sc = okResult('read_file binary: a result', r);
	if (sc) {
		eq('read_file binary: base64', 'base64', sc.encoding);
		eq('read_file binary: the same bytes', bytes.toString('hex'), Buffer.from(String(sc.content), 'base64').toString('hex'));
	}
	r = await s.try('write_file', { path: 'script.sh', content: '#!/bin/sh\necho run-me\n', executable: true });
	okResult('write_file executable: a result', r);
	eq('write_file executable: it runs', 'run-me\n', (await run('./script.sh')).stdout);
	eq('write_file: owned by the sandbox user, mode 0644, 0755 with executable', '1000 644\n1000 755\n',
		(await run('stat -c "%u %a" notes/hello.txt script.sh')).stdout);
	eq('run_command: a relative cwd is under /workspace', '/workspace/notes\n', (await run('pwd', { cwd: 'notes' })).stdout);
	await run('echo private >/tmp/private; chmod 000 /tmp/private; mkdir /tmp/ro; chmod 555 /tmp/ro');
	toolError('read_file acts as the sandbox user: a mode 000 file is refused', await s.try('read_file', { path: '/tmp/private' }), /path/);
	toolError('write_file acts as the sandbox user: a read-only directory is refused', await s.try('write_file', { path: '/tmp/ro/x', content: 'x' }), /path/);
	await run('ln -s out.txt link.txt');
	r = await s.try('list_files', {});
	sc = okResult('list_files: a result', r);
	if (sc) {
		const e = Object.fromEntries((sc.entries || []).map((x) => [x.name, x]));
		eq('list_files: /workspace by default', '/workspace', sc.path);
		eq('list_files: the entries of /workspace', ['bin.dat', 'link.txt', 'notes', 'out.txt', 'script.sh'], Object.keys(e).sort());
		eq('list_files: a file', { path: '/workspace/out.txt', type: 'file', size: 2 }, pick(e['out.txt'], 'path', 'type', 'size'));
		eq('list_files: a directory', 'dir', e.notes?.type);
		eq('list_files: a symlink and its target', { type: 'symlink', symlink_target: 'out.txt' }, pick(e['link.txt'], 'type', 'symlink_target'));
		const mode = e['script.sh']?.mode;
		const m = typeof mode === 'string' ? parseInt(mode, 8) : mode;
		check('list_files: the executable has x bits in its mode', Number.isInteger(m) && (m & 0o111) !== 0, show(e['script.sh']));
		check('list_files: every entry has the documented fields', (sc.entries || []).every((x) =>
			['path', 'name', 'type', 'size', 'mode', 'mtime', 'symlink_target'].every((k) => k in x)), show(sc.entries));
	}
	r = await s.try('list_files', { path: '/workspace', depth: 2 });
	sc = okResult('list_files depth 2: a result', r);
	if (sc) check('list_files depth 2: reaches into notes/', (sc.entries || []).some((x) => x.path === '/workspace/notes/hello.txt'), show(sc.entries));
	toolError('list_files: depth 9 is refused, naming depth', await s.try('list_files', { depth: 9 }), /depth/);
	await s.call('write_file', { path: 'ten.txt', content: 'abcdefghij' });
	r = await s.try('read_file', { path: 'ten.txt', offset: 2, max_bytes: 3 });
	sc = okResult('read_file offset/max_bytes: a result', r);
	if (sc) eq('read_file offset 2 max_bytes 3: cde, truncated, next_offset 5', { content: 'cde', offset: 2, next_offset: 5, truncated: true, size: 10 },
		pick(sc, 'content', 'offset', 'next_offset', 'truncated', 'size'));
	r = await s.try('read_file', { path: 'ten.txt', offset: 7, max_bytes: 10 });
	sc = okResult('read_file to the end: a result', r);
	if (sc) eq('read_file offset 7: hij, not truncated', { content: 'hij', next_offset: 10, truncated: false }, pick(sc, 'content', 'next_offset', 'truncated'));
	toolError('read_file of a missing file: a tool error naming the path', await s.try('read_file', { path: 'nope/missing.txt' }), /nope\/missing\.txt/);
	toolError('write_file with encoding hex: a tool error naming encoding', await s.try('write_file', { path: 'x', content: 'ff', encoding: 'hex' }), /encoding/);
	// a symlink the agent plants leads to the sandbox's own /, never the host's
	const esc = `mcp-escape-${process.pid}`;
	await run('ln -s / /workspace/root');
	r = await s.try('write_file', { path: `root/tmp/${esc}`, content: 'inside' });
	check('write_file through a symlink to /: nothing lands on the host', !fs.existsSync(`/tmp/${esc}`), show(r));
	if (r && !r.thrown && r.isError !== true) eq("write_file through a symlink to /: it is the sandbox's /tmp", 'inside', (await run(`cat /tmp/${esc}`)).stdout);
	fs.rmSync(`/tmp/${esc}`, { force: true });

	// ---- run_code ----
	// the sandbox sees the host's /usr: node is there unless this one came from elsewhere
	if (/^\/(usr|bin)\//.test(fs.realpathSync(process.execPath))) {
		eq('run_code node', '2,4,6\n', (await s.call('run_code', { language: 'node', code: 'console.log([1, 2, 3].map((x) => x * 2).join(","))' })).structuredContent?.stdout);
	} else {
		skip('run_code node', `node is ${process.execPath}, outside /usr`);
	}
	match('run_code bash', /^3 [0-9]+\n$/, (await s.call('run_code', { language: 'bash', code: 'a=(x y z); echo "${#a[@]} ${BASH_VERSINFO[0]}"' })).structuredContent?.stdout);
	eq('run_code sh', 'sh-42\n', (await s.call('run_code', { language: 'sh', code: 'echo sh-$((6 * 7))' })).structuredContent?.stdout);
	toolError('run_code python with stdin: a tool error naming stdin (a kernel reads none)',
		await s.try('run_code', { language: 'python', code: 'input()', stdin: 'abc' }), /stdin/);
	toolError('run_code language cobol: a tool error naming language', await s.try('run_code', { language: 'cobol', code: 'x' }), /language/);
	await codeInterpreter(s);

	// ---- timeout, truncation ----
	let t0 = Date.now();
	r = await s.try('run_command', { command: 'sleep 30', timeout_s: 1 });
	let secs = (Date.now() - t0) / 1000;
	sc = okResult('run_command timeout_s 1: a result', r);
	if (sc) eq('run_command timeout_s 1: reason timeout', 'timeout', sc.reason);
	check(`run_command timeout_s 1: over within 5 s (took ${secs.toFixed(1)} s)`, secs < 5);
	eq('after a timeout the sandbox keeps its files', '42', (await run('cat out.txt')).stdout);
	r = await s.try('run_command', { command: "head -c 1048576 /dev/zero | tr '\\0' a; echo tail >&2" });
	sc = okResult('1 MiB of output: a result', r);
	if (sc) {
		eq('1 MiB of output: exit 0, stdout_truncated, stdout_bytes counts all', { exit_code: 0, stdout_truncated: true, stdout_bytes: 1048576 },
			pick(sc, 'exit_code', 'stdout_truncated', 'stdout_bytes'));
		eq('1 MiB of output: the first 256 KiB are kept (--max-output default)', 262144, sc.stdout?.length);
		eq('1 MiB of output: stderr is whole', { stderr: 'tail\n', stderr_truncated: false }, pick(sc, 'stderr', 'stderr_truncated'));
	}

	// ---- background processes ----
	r = await s.try('start_process', { command: 'i=0; while :; do echo line $i; i=$((i+1)); sleep 0.2; done' });
	sc = okResult('start_process: a result', r);
	const PID = sc?.process_id;
	if (sc) check('start_process: a process_id and a pid', typeof PID === 'string' && PID !== '' && Number.isInteger(sc.pid) && sc.pid > 0, show(sc));
	if (PID) {
		r = await s.try('read_process_output', { process_id: PID, wait_s: 5 });
		sc = okResult('read_process_output: a result', r);
		if (sc) {
			eq('read_process_output: running, no exit yet', { running: true, exit_code: null }, pick(sc, 'running', 'exit_code'));
			match('read_process_output: its first lines', /^line 0\n/, sc.stdout);
		}
		await sleep(500);
		r = await s.try('read_process_output', { process_id: PID, wait_s: 5 });
		sc = okResult('read_process_output again: a result', r);
		if (sc) match('read_process_output again: only what came since', /^line [1-9][0-9]*\n/, sc.stdout);
		r = await s.try('list_sandboxes');
		sc = okResult('list_sandboxes: a result', r);
		if (sc) eq('list_sandboxes: the default sandbox', [{ sandbox_id: DEFAULT_ID, default: true }],
			(sc.sandboxes || []).map((x) => pick(x, 'sandbox_id', 'default')));
		r = await s.try('stop_process', { process_id: PID });
		sc = okResult('stop_process: a result', r);
		if (sc) eq('stop_process: TERM by default', { process_id: PID, signal: 'TERM' }, pick(sc, 'process_id', 'signal'));
		sc = await waitFor(async () => {
			const x = (await s.call('read_process_output', { process_id: PID, wait_s: 1 })).structuredContent;
			return x?.running === false ? x : null;
		}, 5000);
		check('stop_process: the process ends', sc?.running === false, show(sc));
		if (sc) eq('stop_process: reason signaled, by SIGTERM', { reason: 'signaled', exit_code: null, signal: 15 },
			{ ...pick(sc, 'reason', 'exit_code'), signal: sc.report?.signal });
	}
	r = await s.try('start_process', { command: 'echo done; echo e >&2; exit 7' });
	const PID2 = r?.structuredContent?.process_id;
	let got = { stdout: '', stderr: '' }; // what the reads returned, put together
	sc = PID2 && await waitFor(async () => {
		const x = (await s.call('read_process_output', { process_id: PID2, wait_s: 2 })).structuredContent;
		got = { stdout: got.stdout + (x?.stdout ?? ''), stderr: got.stderr + (x?.stderr ?? '') };
		return x?.running === false ? x : null;
	}, 5000);
	eq('a background process that exits: its output and exit code', { running: false, exit_code: 7, reason: 'exited', stdout: 'done\n', stderr: 'e\n' },
		{ ...pick(sc, 'running', 'exit_code', 'reason'), ...got });
	r = await s.try('read_process_output', { process_id: PID2 });
	eq('read_process_output after the end: the exit again, no output again', { running: false, exit_code: 7, stdout: '', stderr: '' },
		pick(r?.structuredContent, 'running', 'exit_code', 'stdout', 'stderr'));
	r = await s.try('stop_process', { process_id: PID2 });
	check('stop_process of an ended process: done, or a tool error naming that process', r && !r.thrown &&
		(r.isError !== true || textOf(r).includes(`'${PID2}'`)), show(r));
	toolError('read_process_output of an unknown process: a tool error naming process_id', await s.try('read_process_output', { process_id: 'nosuch' }), /process_id/);
	toolError('stop_process with signal BOGUS: a tool error naming signal', await s.try('stop_process', { process_id: PID || 'x', signal: 'BOGUS' }), /signal/);

	// ---- bad arguments are tool errors, not protocol errors ----
	toolError('run_command with command 5: a tool error naming command', await s.try('run_command', { command: 5 }), /command/);
	toolError('run_command without command: a tool error naming command', await s.try('run_command', {}), /command/);
	toolError('run_command with timeout_s "x": a tool error naming timeout_s', await s.try('run_command', { command: 'true', timeout_s: 'x' }), /timeout_s/);
	toolError('run_command in an unknown sandbox: a tool error naming sandbox_id', await s.try('run_command', { command: 'true', sandbox_id: 'sb_nosuchsandbox' }), /sandbox_id/);

	// ---- stdin closes: the server exits and takes its sandbox with it ----
	const below = descendants(s.pid);
	eq("the server's children: one sandbox init", 1, inits(below).length);
	s.proc.stdin.end();
	check('stdin closed: the server exits within 5 s', await exited(s.proc, 5000));
	eq('stdin closed: exit status 0', { code: 0, signal: null }, { code: s.proc.exitCode, signal: s.proc.signalCode });
	const left = await waitGone(below);
	check('stdin closed: no process of the session is left', left.length === 0, fmt(left));
	await s.close();
}

async function sandboxes() {
	const s = await session(['--max-sandboxes', '2']);
	let r = await s.try('create_sandbox', { env: { WHO: 'sandbox-a' } });
	let sc = okResult('create_sandbox: a result', r);
	const A = sc?.sandbox_id;
	if (!sc) { await s.close(); return; }
	check('create_sandbox: an id, the network, limits and workspace', typeof A === 'string' && A !== '' &&
		typeof sc.network?.mode === 'string' && typeof sc.limits === 'object' && 'memory_bytes' in (sc.limits || {}) && 'workspace' in sc, show(sc));
	r = await s.try('run_command', { sandbox_id: A, command: 'echo "$WHO" >a.txt; cat a.txt' });
	sc = okResult('run_command in the new sandbox: a result', r);
	eq('run_command in the new sandbox: its env', 'sandbox-a\n', sc?.stdout);
	eq('run_command in the new sandbox: its sandbox_id', A, sc?.sandbox_id);
	r = await s.try('run_command', { command: 'ls /workspace; echo "[$WHO]"' });
	sc = okResult('run_command in the default sandbox: a result', r);
	eq("the default sandbox has neither the other's file nor its env", '[]\n', sc?.stdout);
	const D = sc?.sandbox_id;
	check('the default sandbox is another one', typeof D === 'string' && D !== A, show(D));
	await s.call('write_file', { path: 'b.txt', content: 'b' });
	eq("the new sandbox does not see the default one's file", 'a.txt\n', (await s.call('run_command', { sandbox_id: A, command: 'ls' })).structuredContent?.stdout);
	r = await s.try('read_file', { sandbox_id: A, path: 'a.txt' });
	eq('read_file with sandbox_id', 'sandbox-a\n', r?.structuredContent?.content);
	// process ids are the session's: each names its own sandbox's process
	const pa = (await s.call('start_process', { sandbox_id: A, command: 'echo from-A; sleep 1' })).structuredContent;
	const pd = (await s.call('start_process', { command: 'echo from-default; sleep 1' })).structuredContent;
	check('start_process in two sandboxes: two process ids', pa?.process_id && pd?.process_id && pa.process_id !== pd.process_id, show([pa, pd]));
	const outOf = async (p) => {
		const x = p && (await s.call('read_process_output', { process_id: p.process_id, wait_s: 5 })).structuredContent;
		return pick(x, 'sandbox_id', 'stdout');
	};
	eq("read_process_output: the new sandbox's process", { sandbox_id: A, stdout: 'from-A\n' }, await outOf(pa));
	eq("read_process_output: the default sandbox's process", { sandbox_id: D, stdout: 'from-default\n' }, await outOf(pd));
	r = await s.try('list_sandboxes');
	sc = okResult('list_sandboxes: a result', r);
	if (sc) eq('list_sandboxes: both, the default one marked', [[A, false], [D, true]].sort(),
		(sc.sandboxes || []).map((x) => [x.sandbox_id, x.default]).sort());
	eq('two sandboxes: two inits', 2, inits(descendants(s.pid)).length);
	await pauseResume(s, A, 'embedded');
	toolError('--max-sandboxes 2: a third is refused', await s.try('create_sandbox', {}), /./);
	r = await s.try('destroy_sandbox', { sandbox_id: A });
	sc = okResult('destroy_sandbox: a result', r);
	eq('destroy_sandbox: the answer', { sandbox_id: A, destroyed: true }, sc);
	check('destroy_sandbox: its init is gone', await waitFor(() => inits(descendants(s.pid)).length === 1, 5000), fmt(descendants(s.pid)));
	toolError('run_command in a destroyed sandbox: a tool error naming sandbox_id', await s.try('run_command', { sandbox_id: A, command: 'true' }), /sandbox_id/);
	toolError("read_process_output of a destroyed sandbox's process: a tool error naming process_id", await s.try('read_process_output', { process_id: pa?.process_id ?? 'x' }), /process_id/);
	toolError('destroy_sandbox again: a tool error', await s.try('destroy_sandbox', { sandbox_id: A }), /./);
	toolError('destroy_sandbox without sandbox_id: a tool error naming sandbox_id', await s.try('destroy_sandbox', {}), /sandbox_id/);
	r = await s.try('create_sandbox', {});
	sc = okResult('after a destroy, another sandbox fits', r);
	if (sc) await s.call('destroy_sandbox', { sandbox_id: sc.sandbox_id });
	eq('the default sandbox still has its file', 'b', (await s.call('read_file', { path: 'b.txt' })).structuredContent?.content);
	await s.end('sandboxes');
}

// pause_sandbox stops a busy loop where it is, resume_sandbox lets it go on
async function pauseResume(s, id, what) {
	const n = async () => Number((await s.try('read_file', { sandbox_id: id, path: 'n' }))?.structuredContent?.content);
	const spin = (await s.try('start_process', { sandbox_id: id, command: 'i=0; while :; do i=$((i+1)); echo $i >n.tmp; mv n.tmp n; done' }))?.structuredContent;
	await waitFor(async () => (await n()) > 0, 5000);
	let r = await s.try('pause_sandbox', { sandbox_id: id });
	eq(`${what}: pause_sandbox`, { sandbox_id: id, state: 'paused' }, okResult(`${what}: pause_sandbox: a result`, r));
	eq(`${what}: pause_sandbox again (idempotent)`, 'paused', (await s.try('pause_sandbox', { sandbox_id: id }))?.structuredContent?.state);
	const a = await n();
	await new Promise((res) => setTimeout(res, 500));
	eq(`${what}: paused: the loop does not advance`, a, await n());
	eq(`${what}: list_sandboxes says paused`, 'paused',
		(await s.try('list_sandboxes'))?.structuredContent?.sandboxes?.find((x) => x.sandbox_id === id)?.state);
	toolError(`${what}: run_command while paused: a tool error saying paused`, await s.try('run_command', { sandbox_id: id, command: 'true' }), /paused/);
	eq(`${what}: write_file while paused works`, 5, (await s.try('write_file', { sandbox_id: id, path: 'p.txt', content: 'still' }))?.structuredContent?.size);
	r = await s.try('resume_sandbox', { sandbox_id: id });
	eq(`${what}: resume_sandbox`, { sandbox_id: id, state: 'running' }, okResult(`${what}: resume_sandbox: a result`, r));
	eq(`${what}: list_sandboxes says running again`, 'running',
		(await s.try('list_sandboxes'))?.structuredContent?.sandboxes?.find((x) => x.sandbox_id === id)?.state);
	check(`${what}: resumed: the loop goes on`, await waitFor(async () => (await n()) > a, 5000));
	eq(`${what}: resumed: run_command works`, 'still', (await s.try('run_command', { sandbox_id: id, command: 'cat p.txt' }))?.structuredContent?.stdout);
	toolError(`${what}: pause_sandbox without sandbox_id: a tool error naming sandbox_id`, await s.try('pause_sandbox', {}), /sandbox_id/);
	toolError(`${what}: pause_sandbox of an unknown sandbox: a tool error naming sandbox_id`, await s.try('pause_sandbox', { sandbox_id: 'sb_nonexistent1' }), /sandbox_id/);
	if (spin?.process_id) await s.try('stop_process', { process_id: spin.process_id, signal: 'KILL' });
}

async function policy() {
	const s = await session(['--memory', '256M', '--allow', 'example.com', '--timeout', '2']);
	toolError('policy: limits.memory 1G over --memory 256M is refused, naming limits.memory', await s.try('create_sandbox', { limits: { memory: '1G' } }), /limits\.memory/);
	toolError('policy: an allow rule the operator does not cover is refused, naming network.allow[0]', await s.try('create_sandbox', { network: { allow: ['other.org'] } }), /network\.allow\[0\]/);
	toolError('policy: network mode open is refused, naming network.mode', await s.try('create_sandbox', { network: { mode: 'open' } }), /network\.mode/);
	toolError('policy: limits.timeout_s over --timeout 2 is refused, naming limits.timeout_s', await s.try('create_sandbox', { limits: { timeout_s: 10 } }), /limits\.timeout_s/);
	toolError('policy: a workspace without --allow-host-path is refused, naming workspace', await s.try('create_sandbox', { workspace: TMP }), /workspace/);
	toolError('create_sandbox with limits "lots": a tool error naming limits', await s.try('create_sandbox', { limits: 'lots' }), /limits/);
	toolError('create_sandbox with limits.memory "lots": a tool error naming limits.memory', await s.try('create_sandbox', { limits: { memory: 'lots' } }), /limits\.memory/);
	eq('refused requests create nothing', 0, inits(descendants(s.pid)).length);
	const made = async (desc, args, want, got) => {
		const r = await s.try('create_sandbox', args);
		const sc = okResult(desc, r);
		if (sc) { eq(desc, want, got(sc)); await s.call('destroy_sandbox', { sandbox_id: sc.sandbox_id }); }
	};
	await made('policy: limits.memory 128M under 256M is granted', { limits: { memory: '128M' } }, 134217728, (sc) => sc.limits?.memory_bytes);
	await made('policy: an allow rule the operator has is granted', { network: { allow: ['example.com'] } },
		{ mode: 'allowlist', allow: true }, (sc) => ({ mode: sc.network?.mode, allow: (sc.network?.allow || []).includes('example.com') }));
	await made("policy: a deny rule may always be added", { network: { deny: ['deny.example.com'] } }, true,
		(sc) => (sc.network?.deny || []).includes('deny.example.com'));
	await made("policy: without arguments, the operator's spec", {}, { memory_bytes: 268435456, timeout_s: 2, allow: true },
		(sc) => ({ memory_bytes: sc.limits?.memory_bytes, timeout_s: sc.limits?.timeout_s, allow: (sc.network?.allow || []).includes('example.com') }));
	const t0 = Date.now();
	const r = await s.try('run_command', { command: 'sleep 10' });
	const secs = (Date.now() - t0) / 1000;
	eq("policy: --timeout 2 is a command's default timeout", 'timeout', r?.structuredContent?.reason);
	check(`policy: --timeout 2: over within 6 s (took ${secs.toFixed(1)} s)`, secs < 6);
	await s.end('policy');
}

async function protocol() {
	const r = new Raw(['--max-message', '65536']);
	let m = await r.ask({ jsonrpc: '2.0', id: 1, method: 'ping' });
	eq('before initialize: ping answers {}', { jsonrpc: '2.0', id: 1, result: {} }, m);
	m = await r.ask({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
	eq('before initialize: tools/list is refused (-32600)', { id: 2, code: -32600 }, errOf(m));
	m = await r.ask(INIT(3, '1999-01-01'));
	eq('initialize with an unknown revision: the server answers with its latest', '2025-11-25', m?.result?.protocolVersion);
	r.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
	m = await r.ask('{"jsonrpc":"2.0","id":4,');
	eq('unparsable JSON: -32700 with id null', { id: null, code: -32700 }, errOf(m));
	m = await r.ask('[{"jsonrpc":"2.0","id":5,"method":"ping"}]');
	eq('a batch: -32600 with id null', { id: null, code: -32600 }, errOf(m));
	m = await r.ask({ jsonrpc: '1.0', id: 6, method: 'ping' });
	eq('jsonrpc "1.0": -32600', -32600, m?.error?.code);
	m = await r.ask({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' });
	eq('an object id: -32600 with id null', { id: null, code: -32600 }, errOf(m));
	m = await r.ask({ jsonrpc: '2.0', id: 1.5, method: 'ping' });
	eq('a fractional id: -32600', -32600, m?.error?.code);
	m = await r.ask({ jsonrpc: '2.0', id: 7, method: 'resources/list' });
	eq('an unknown method: -32601', { id: 7, code: -32601 }, errOf(m));
	m = await r.ask({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
	eq('tools/call of an unknown tool: -32602', { id: 8, code: -32602 }, errOf(m));
	m = await r.ask({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { arguments: {} } });
	eq('tools/call without a name: -32602', { id: 9, code: -32602 }, errOf(m));
	r.send({ jsonrpc: '2.0', method: 'notifications/no_such_thing' });
	m = await r.ask({ jsonrpc: '2.0', id: 'str-10', method: 'ping' });
	eq('an unknown notification gets no answer; a string id is echoed', { jsonrpc: '2.0', id: 'str-10', result: {} }, m);
	m = await r.ask(JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'ping', params: { pad: 'x'.repeat(100 * 1024) } }));
	eq('100 KiB over --max-message 65536: -32600 with id null', { id: null, code: -32600 }, errOf(m));
	m = await r.ask({ jsonrpc: '2.0', id: 12, method: 'ping' });
	eq('after an oversized message the next one is served', { jsonrpc: '2.0', id: 12, result: {} }, m);
	m = await r.ask({ jsonrpc: '2.0', id: 13, method: 'tools/call', params: { name: 'run_command',
		arguments: { command: ': ' + 'y'.repeat(60000) + '; echo under-the-limit' } } }, 20000);
	eq('a 60 KiB message under the limit is served', 'under-the-limit\n', m?.result?.structuredContent?.stdout);
	m = await r.ask({ jsonrpc: '2.0', id: 14, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'echo still-alive' } } }, 20000);
	eq('after all that, run_command works', { id: 14, stdout: 'still-alive\n', isError: false },
		{ id: m?.id, stdout: m?.result?.structuredContent?.stdout, isError: m?.result?.isError ?? false });
	check('stdout carried JSON-RPC 2.0 messages only', r.all.every((x) => x.jsonrpc === '2.0'), show(r.all.filter((x) => x.jsonrpc !== '2.0')));
	check('protocol session: stdin closed, the server exits 0', await r.end(), `code ${r.p.exitCode}, signal ${r.p.signalCode}`);

	const r2 = new Raw([]);
	m = await r2.ask(INIT(1, '2025-06-18'));
	eq('initialize with 2025-06-18: that revision', '2025-06-18', m?.result?.protocolVersion);
	eq('initialize: serverInfo.name', 'paddock', m?.result?.serverInfo?.name);
	check('second protocol session: stdin closed, the server exits 0', await r2.end(), `code ${r2.p.exitCode}, signal ${r2.p.signalCode}`);
}

async function cancellation() {
	const s = await session([]);
	await s.call('write_file', { path: 'keep.txt', content: 'kept' });
	const ac = new AbortController();
	const t0 = Date.now();
	const p = s.call('run_command', { command: 'sleep 30' }, { signal: ac.signal }).then((r) => ({ r }), (e) => ({ e }));
	const sleeping = await waitFor(() => { const l = descendants(s.pid).filter((x) => /(^|\s)sleep 30$/.test(x.args)); return l.length ? l : null; }, 5000);
	check('cancellation: the command runs (sleep 30 below the server)', sleeping, fmt(descendants(s.pid)));
	await sleep(Math.max(0, 1000 - (Date.now() - t0)));
	ac.abort('the test cancels');
	const res = await p;
	check('cancellation: the SDK rejects the call', !!res.e, show(res));
	const left = sleeping ? await waitGone(sleeping) : [];
	check('cancellation: the sleep 30 is killed within 5 s', sleeping && left.length === 0, fmt(left));
	await sleep(300);
	check('cancellation: no answer is sent for the cancelled call', s.errors.length === 0, s.errors.map((e) => e.message).join('\n'));
	eq('cancellation: the server still answers, the sandbox keeps its files', 'kept', (await s.call('run_command', { command: 'cat keep.txt' })).structuredContent?.stdout);
	const below = descendants(s.pid);
	await s.end('cancellation');
	const gone = await waitGone(below);
	check('cancellation: no process of the session is left', gone.length === 0, fmt(gone));
}

async function signals() {
	for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL']) {
		const s = await session([]);
		const sc = (await s.call('create_sandbox', {})).structuredContent;
		await s.call('start_process', { command: 'sleep 100' });
		await s.call('start_process', { command: 'sleep 100', sandbox_id: sc?.sandbox_id });
		const counts = (l) => [inits(l).length, l.filter((x) => x.args === 'sleep 100').length];
		const below = await waitFor(() => { const l = descendants(s.pid); return isDeepStrictEqual(counts(l), [2, 2]) ? l : null; }, 5000) ||
			descendants(s.pid);
		eq(`${sig}: before, two inits and two sleeps below the server`, [2, 2], counts(below));
		process.kill(s.pid, sig);
		check(`${sig}: the server exits within 5 s`, await exited(s.proc, 5000));
		const left = await waitGone(below);
		check(`${sig}: every sandbox process is gone`, left.length === 0, fmt(left));
		await s.close();
	}
}

async function concurrency() {
	const s = await session([]);
	await s.call('run_command', { command: 'true' });
	const slow = s.call('run_command', { command: 'sleep 3; echo slow' });
	await sleep(300);
	const t0 = Date.now();
	await s.client.ping();
	const fast = (await s.call('run_command', { command: 'echo fast' })).structuredContent?.stdout;
	const other = (await s.call('create_sandbox', {})).structuredContent?.sandbox_id;
	const there = other && (await s.call('run_command', { sandbox_id: other, command: 'echo there' })).structuredContent?.stdout;
	const secs = (Date.now() - t0) / 1000;
	eq('while a command runs: ping, a call in its sandbox and in another are answered', ['fast\n', 'there\n'], [fast, there]);
	check(`while a command runs: ... at once (took ${secs.toFixed(1)} s)`, secs < 2);
	eq('the long command answers in the end', 'slow\n', (await slow).structuredContent?.stdout);

	// a sandbox keeps at most 32 background processes, ended ones included
	let ids = 0;
	for (let i = 0; i < 32; i++) {
		const r = await s.try('start_process', { sandbox_id: other, command: 'true' });
		if (r?.structuredContent?.process_id) ids++;
	}
	eq('32 background processes in a sandbox', 32, ids);
	toolError('a 33rd is refused', await s.try('start_process', { sandbox_id: other, command: 'true' }), /./);
	check('another sandbox still takes one', (await s.try('start_process', { command: 'true' }))?.structuredContent?.process_id);
	await s.end('concurrency');
}

// JSON-RPC bounds, and calls still running when stdin closes
async function bounds() {
	const r = new Raw([]);
	await r.ask(INIT(1, '2025-11-25'));
	r.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
	await r.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'true' } } }, 20000);
	for (let id = 100; id < 165; id++) {
		r.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'sleep 2' } } });
	}
	const got = [];
	for (let i = 0; i < 65; i++) { const m = await r.next(15000); if (!m) break; got.push(m); }
	const errs = got.filter((m) => m.error);
	eq('65 calls at once: the 65th is refused with -32000', [{ id: 164, code: -32000 }], errs.map(errOf));
	eq('65 calls at once: the 64 others are answered', 64, got.filter((m) => m.result?.structuredContent?.exit_code === 0).length);

	const below = descendants(r.p.pid);
	r.send({ jsonrpc: '2.0', id: 200, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'sleep 1; echo late' } } });
	r.send({ jsonrpc: '2.0', id: 201, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'sleep 60' } } });
	await waitFor(() => descendants(r.p.pid).some((x) => x.args === 'sleep 60'), 5000);
	const running = descendants(r.p.pid);
	const t0 = Date.now();
	const ended = r.end(15000);
	const m = await r.next(5000);
	eq('stdin closed: a running call still answers', { id: 200, stdout: 'late\n' }, { id: m?.id, stdout: m?.result?.structuredContent?.stdout });
	const ok = await ended;
	const secs = (Date.now() - t0) / 1000;
	check(`stdin closed: a call that goes on is cancelled after 10 s, the server exits 0 (took ${secs.toFixed(1)} s)`, ok && secs >= 9 && secs < 15,
		`code ${r.p.exitCode}, signal ${r.p.signalCode}`);
	eq('stdin closed: no answer for the cancelled call', [], r.queue.map((x) => x.id));
	const left = await waitGone([...below, ...running]);
	check('stdin closed: no process of the session is left', left.length === 0, fmt(left));
}

// `paddock mcp --http` on a free port with ARGS: the server, and its /mcp URL once it answers
// there (none after five ports tried)
async function httpServer(args) {
	let srv;
	let url;
	for (let i = 0; i < 5 && !url; i++) {
		const port = 20000 + Math.floor(Math.random() * 20000);
		srv = track(spawn(PADDOCK, ['mcp', '--http', `127.0.0.1:${port}`, ...args], { stdio: ['ignore', 'ignore', 'inherit'] }));
		const up = await waitFor(async () => {
			if (srv.exitCode !== null) return 'exited';
			return (await fetch(`http://127.0.0.1:${port}/mcp`).then((x) => x.status, () => 0)) === 400 ? 'up' : null;
		}, 5000);
		if (up === 'up') url = `http://127.0.0.1:${port}/mcp`;
		else srv.kill('SIGKILL');
	}
	return { srv, url };
}

// A session at url through the SDK's own HTTP client transport; call(NAME, ARGS, OPTS) calls
// a tool
async function httpSession(url) {
	const transport = new StreamableHTTPClientTransport(new URL(url));
	const client = new Client({ name: 'paddock-integration-test', version: '1.0.0' });
	await client.connect(transport, { timeout: 20000 });
	const call = async (name, a = {}, o = {}) => (await client.callTool({ name, arguments: a }, undefined, { timeout: 30000, ...o }));
	return { client, transport, call };
}

// Streamable HTTP (--http), with the SDK's own HTTP client transport
async function streamableHttp() {
	const { srv, url } = await httpServer(['--max-sandboxes', '2']);
	if (!check('--http: the server listens (GET /mcp without a session is 400)', url)) return;
	const connect = async () => {
		const c = await httpSession(url);
		await c.client.listTools();
		return c;
	};
	const a = await connect();
	eq('--http: initialize, a session id', { name: 'paddock', version: '2025-11-25', session: true },
		{ name: a.client.getServerVersion()?.name, version: a.transport.protocolVersion, session: typeof a.transport.sessionId === 'string' && a.transport.sessionId.length >= 16 });
	eq('--http: run_command', 'over-http\n1000\n', (await a.call('run_command', { command: 'echo over-http; id -u' })).structuredContent?.stdout);
	await a.call('write_file', { path: 'h.txt', content: 'via http' });
	eq('--http: write_file then read_file', 'via http', (await a.call('read_file', { path: 'h.txt' })).structuredContent?.content);
	const b = await connect();
	check('--http: another client, another session', b.transport.sessionId && b.transport.sessionId !== a.transport.sessionId);
	eq("--http: a session does not see another's sandboxes", [], (await b.call('list_sandboxes')).structuredContent?.sandboxes);
	eq("--http: nor its files", 'absent\n', (await b.call('run_command', { command: 'cat h.txt 2>/dev/null || echo absent' })).structuredContent?.stdout);

	// cancellation over HTTP
	const ac = new AbortController();
	const p = a.call('run_command', { command: 'sleep 30' }, { signal: ac.signal }).then((r) => ({ r }), (e) => ({ e }));
	const sleeping = await waitFor(() => { const l = descendants(srv.pid).filter((x) => /(^|\s)sleep 30$/.test(x.args)); return l.length ? l : null; }, 5000);
	ac.abort('the test cancels');
	await p;
	const left = sleeping ? await waitGone(sleeping) : ['no sleep 30 seen'];
	check('--http: notifications/cancelled kills the command', sleeping && left.length === 0, fmt(left));

	// what the SDK never sends
	const post = (body, headers = {}) => fetch(url, { method: 'POST', body: JSON.stringify(body),
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }).then((x) => x.status, () => 0);
	const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
	eq('--http: a request without Mcp-Session-Id is 400', 400, await post(ping));
	eq('--http: an unknown Mcp-Session-Id is 404', 404, await post(ping, { 'mcp-session-id': 'f'.repeat(32) }));
	eq('--http: a foreign Origin is 403', 403, await post(ping, { 'mcp-session-id': a.transport.sessionId, origin: 'http://evil.example' }));
	eq('--http: a ping in the session is 200', 200, await post(ping, { 'mcp-session-id': a.transport.sessionId, 'mcp-protocol-version': '2025-11-25' }));
	eq('--http: an unknown MCP-Protocol-Version is 400', 400, await post(ping, { 'mcp-session-id': a.transport.sessionId, 'mcp-protocol-version': '1999-01-01' }));

	// DELETE ends a session and its sandboxes; SIGTERM the rest
	const before = inits(descendants(srv.pid));
	eq('--http: one sandbox per session so far', 2, before.length);
	const aid = a.transport.sessionId;
	await a.transport.terminateSession();
	check('--http: DELETE ends the session\'s sandbox', await waitFor(() => inits(descendants(srv.pid)).length === 1, 5000), fmt(descendants(srv.pid)));
	eq('--http: the ended session is 404', 404, await post(ping, { 'mcp-session-id': aid }));
	await a.client.close().catch(() => { });
	const below = descendants(srv.pid);
	srv.kill('SIGTERM');
	check('--http: SIGTERM, the server exits within 5 s', await exited(srv, 5000));
	const gone = await waitGone(below);
	check('--http: SIGTERM, no sandbox process is left', gone.length === 0, fmt(gone));
	await b.client.close().catch(() => { });
}

// A client that goes without terminateSession() (the SDK's close() alone): its session ends
// once it has no GET stream and no request for --session-gone seconds, not after the idle
// timeout; one that keeps its stream keeps its session.
async function streamableHttpGone() {
	const { srv, url } = await httpServer(['--session-gone', '2']);
	if (!check('--session-gone: the server listens', url)) return;
	const connect = () => httpSession(url);
	const a = await connect();
	const b = await connect();
	await a.call('run_command', { command: 'true' });
	await b.call('run_command', { command: 'true' });
	eq('--session-gone: a sandbox per session', 2, inits(descendants(srv.pid)).length);
	await a.client.close(); // no terminateSession(): the session's end is the server's to see
	check('--session-gone: the session of a client that closed ends within 20 s, with its sandbox',
		await waitFor(() => inits(descendants(srv.pid)).length === 1, 20000, 200), fmt(descendants(srv.pid)));
	eq('--session-gone: a client that keeps its stream keeps its session', 'still\n',
		(await b.call('run_command', { command: 'echo still' })).structuredContent?.stdout);
	await new Promise((r) => setTimeout(r, 5000));
	eq('--session-gone: ...also after twice the grace without a request', 'still\n',
		(await b.call('run_command', { command: 'echo still' })).structuredContent?.stdout);
	await b.transport.terminateSession();
	await b.client.close();
	srv.kill('SIGTERM');
	check('--session-gone: SIGTERM, the server exits within 5 s', await exited(srv, 5000));
}

function daemonApi(sock, method, path) {
	return new Promise((res) => {
		const req = http.request({ socketPath: sock, method, path }, (rsp) => {
			let b = '';
			rsp.on('data', (d) => { b += d; });
			rsp.on('end', () => { let j = null; try { j = JSON.parse(b); } catch { } res({ status: rsp.statusCode, body: j }); });
		});
		req.on('error', () => res({ status: 0 }));
		req.end();
	});
}

async function connect() {
	const what = 'paddock mcp --connect';
	if (!PADDOCKD) { skip(what, 'PADDOCKD is not set'); return; }
	const sock = `${TMP}/mcpd.sock`;
	const d = track(spawn(PADDOCKD, ['--socket', sock, '--state-dir', `${TMP}/mcpd-state`], { stdio: ['ignore', 'ignore', 'inherit'] }));
	try {
		const up = await waitFor(async () => (await daemonApi(sock, 'GET', '/healthz')).status === 200, 5000);
		if (!check('--connect: paddockd starts', up)) return;
		let s;
		try {
			s = await session(['--connect', sock], { pipeStderr: true });
		} catch (e) {
			if (/not (yet )?(supported|implemented)|unsupported/i.test(`${e.serverStderr} ${e.message}`)) { skip(what, 'not supported yet'); return; }
			throw e;
		}
		let r = await s.try('run_command', { command: 'echo via-paddockd; id -u' });
		if (/not (yet )?(supported|implemented)|unsupported/i.test(textOf(r) + s.stderr)) {
			skip(what, `not supported yet: ${textOf(r) || s.stderr}`);
			await s.close();
			return;
		}
		eq('--connect: run_command', { stdout: 'via-paddockd\n1000\n', exit_code: 0 }, pick(r?.structuredContent, 'stdout', 'exit_code'));
		const bytes = Buffer.from([0xff, 0x00, 0x41]);
		await s.try('write_file', { path: 'd.txt', content: 'through the daemon' });
		await s.try('write_file', { path: 'd.bin', content: bytes.toString('base64'), encoding: 'base64' });
		eq('--connect: write_file then read_file', 'through the daemon', (await s.try('read_file', { path: 'd.txt' }))?.structuredContent?.content);
		eq('--connect: binary write_file then read_file', bytes.toString('base64'), (await s.try('read_file', { path: 'd.bin' }))?.structuredContent?.content);
		const list = async () => ((await daemonApi(sock, 'GET', '/v1/sandboxes')).body?.sandboxes || []).map((x) => x.id).sort();
		const D = r?.structuredContent?.sandbox_id;
		eq('--connect: the sandbox is in paddockd, under its id', [D], await list());
		r = await s.try('create_sandbox', { env: { WHO: 'second' } });
		const B = r?.structuredContent?.sandbox_id;
		eq('--connect: create_sandbox, run_command in it', 'second\n', (await s.try('run_command', { sandbox_id: B, command: 'echo $WHO' }))?.structuredContent?.stdout);
		eq('--connect: both in paddockd', [B, D].sort(), await list());
		await pauseResume(s, B, '--connect');
		await s.try('pause_sandbox', { sandbox_id: B });
		eq('--connect: paused in paddockd too', 'paused', (await daemonApi(sock, 'GET', `/v1/sandboxes/${B}`)).body?.state);
		await s.try('resume_sandbox', { sandbox_id: B });
		eq('--connect: run_command timeout_s 1', 'timeout', (await s.try('run_command', { command: 'sleep 30', timeout_s: 1 }))?.structuredContent?.reason);
		await s.try('run_code', { language: 'python', code: 'v = 40 + 2' });
		eq('--connect: run_code python keeps state through paddockd', '42',
			(await s.try('run_code', { language: 'python', code: 'v' }))?.structuredContent?.results?.[0]?.text);
		const img = await s.try('run_code', { language: 'python', code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()' });
		eq('--connect: run_code matplotlib: an image block', ['image/png'], (img?.content || []).filter((c) => c.type === 'image').map((c) => c.mimeType));
		const PID = (await s.try('start_process', { command: 'echo bg; sleep 30' }))?.structuredContent?.process_id;
		eq('--connect: start_process, read_process_output', { running: true, stdout: 'bg\n' },
			pick((await s.try('read_process_output', { process_id: PID, wait_s: 5 }))?.structuredContent, 'running', 'stdout'));
		await s.try('stop_process', { process_id: PID, signal: 'KILL' });
		const st = await waitFor(async () => {
			const x = (await s.try('read_process_output', { process_id: PID, wait_s: 1 }))?.structuredContent;
			return x?.running === false ? x : null;
		}, 5000);
		eq('--connect: stop_process KILL', { running: false, reason: 'signaled' }, pick(st, 'running', 'reason'));
		const ac = new AbortController();
		const p = s.call('run_command', { command: 'sleep 31' }, { signal: ac.signal }).catch(() => { });
		const sleeping = await waitFor(() => { const l = descendants(d.pid).filter((x) => /(^|\s)sleep 31$/.test(x.args)); return l.length ? l : null; }, 5000);
		ac.abort('the test cancels');
		await p;
		const left = sleeping ? await waitGone(sleeping) : ['no sleep 31 seen'];
		check('--connect: cancellation kills the command in paddockd', sleeping && left.length === 0, fmt(left));
		eq('--connect: destroy_sandbox', { sandbox_id: B, destroyed: true }, (await s.try('destroy_sandbox', { sandbox_id: B }))?.structuredContent);
		toolError('--connect: the destroyed sandbox is unknown', await s.try('run_command', { sandbox_id: B, command: 'true' }), /sandbox_id/);
		eq('--connect: destroyed in paddockd too', [D], await list());
		await s.end('--connect');
		eq('--connect: the session end destroys its sandboxes in paddockd', [], await list());

		// SIGTERM: deleted; SIGKILL: paddockd ends them after --idle-timeout
		for (const [sig, args] of [['SIGTERM', []], ['SIGKILL', ['--idle-timeout', '1']]]) {
			const k = await session(['--connect', sock, ...args]);
			await k.call('run_command', { command: 'true' });
			await k.call('create_sandbox', {});
			eq(`--connect, ${sig}: two sandboxes in paddockd`, 2, (await list()).length);
			process.kill(k.pid, sig);
			check(`--connect, ${sig}: the server exits within 5 s`, await exited(k.proc, 5000));
			check(`--connect, ${sig}: its sandboxes are gone from paddockd within 5 s`, await waitFor(async () => (await list()).length === 0, 5000, 200), show(await list()));
			await k.close();
		}
	} finally {
		// paddockd keeps sandboxes across a SIGTERM: remove any the session left, then stop it
		for (const x of (await daemonApi(sock, 'GET', '/v1/sandboxes')).body?.sandboxes || []) await daemonApi(sock, 'DELETE', `/v1/sandboxes/${x.id}`);
		d.kill('SIGTERM');
		await exited(d, 5000);
	}
}

// ---- main ------------------------------------------------------------------------------------
process.on('unhandledRejection', (e) => diag(`unhandled rejection: ${e?.stack || show(e)}`));
await scenario('basics', basics);
await scenario('sandboxes', sandboxes);
await scenario('policy', policy);
await scenario('protocol', protocol);
await scenario('cancellation', cancellation);
await scenario('signals', signals);
await scenario('concurrency', concurrency);
await scenario('bounds', bounds);
await scenario('streamable HTTP', streamableHttp);
await scenario('streamable HTTP, a client gone', streamableHttpGone);
await scenario('connect', connect);
check(`every tool result that is no error has one text block, its structuredContent as JSON, and only run_code images after it (${stats.results} results)`,
	stats.inconsistent.length === 0, ...stats.inconsistent);
const servers = [...procs().values()].filter((p) => p.args.startsWith(`${PADDOCK} mcp`) && p.state !== 'Z');
check('no paddock mcp of this test is left', servers.length === 0, fmt(servers));
process.exit(0);
