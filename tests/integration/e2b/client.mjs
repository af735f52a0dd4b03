// paddockd's E2B front end end to end (docs/e2b.md), driven by the official E2B JS SDK (npm
// `e2b`, pinned in package.json): the control plane (create, connect, list, getInfo,
// setTimeout, kill, templates, API keys and tenants), commands (foreground, background,
// streaming, stdin, signals, timeouts, re-attaching, many at once), PTYs, files (text, bytes,
// blobs, streams, 50 MiB, listing, metadata, renames, watching), getHost() through the
// `{port}-{id}.{domain}` proxy, the SDK's debug mode, and what the SDK never sends (broken
// Connect envelopes, bad JSON, wrong codecs and tokens, unknown methods), each answered with
// the protocol's error while the server keeps serving.
//
// test-e2b.sh runs it against a paddockd it started with `--e2b 127.0.0.1:0`, with the SDK's
// own environment (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY, E2B_DOMAIN) and E2B_PORT,
// E2B_SOCK (that paddockd's unix socket), E2B_DPID (its pid), PADDOCKD and T_TMP. It prints
// one line per check, "ok - DESC" or "not ok - DESC" (then "# " diagnostics), which
// test-e2b.sh numbers into TAP; it exits 0 when it ran to its end, whatever the checks said.
//
// Every await is bounded: a check that does not finish in its time fails and the next one
// runs. Processes are followed through /proc below paddockd's pid, so that other work on the
// machine never counts.
import {
	AuthenticationError, CommandExitError, FileNotFoundError, FileType, FilesystemEventType,
	InvalidArgumentError, NotFoundError, Sandbox, SandboxError, SandboxNotFoundError, TimeoutError,
} from 'e2b';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import {
	out, show, clean, diag, counts, pass, fail, Failed, eq, assert, match, pick, sleep, rejects, waitFor, check, need,
} from './harness.mjs';

const PORT = Number(process.env.E2B_PORT);
const SOCK = process.env.E2B_SOCK || '';
const DPID = Number(process.env.E2B_DPID || 0);
const PADDOCKD = process.env.PADDOCKD || '';
const TMP = process.env.T_TMP || '/tmp';
const DOMAIN = process.env.E2B_DOMAIN || 'e2b.local';
const RUN = crypto.randomBytes(4).toString('hex'); // marks this run's sandboxes
const T0 = Date.now();

// ---- processes, through /proc -------------------------------------------------------------------
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
	if (!pid) return [];
	const all = [...procs().values()];
	const found = [];
	const queue = [pid];
	while (queue.length) {
		const p = queue.pop();
		for (const c of all) if (c.ppid === p) { found.push(c); queue.push(c.pid); }
	}
	return found.filter((p) => p.state !== 'Z');
}
const fmt = (list) => list.map((p) => `${p.pid} ${p.comm}: ${p.args}`).join('\n') || '(none)';
const below = (re) => descendants(DPID).filter((p) => re.test(p.args));

// ---- paddockd's own API on its unix socket ---------------------------------------------------------
function unixApi(sock, method, path) {
	return new Promise((res) => {
		const req = http.request({ socketPath: sock, method, path, timeout: 10000 }, (rsp) => {
			let b = '';
			rsp.on('data', (d) => { b += d; });
			rsp.on('end', () => { let j = null; try { j = JSON.parse(b); } catch { } res({ status: rsp.statusCode, body: j, text: b }); });
		});
		req.on('timeout', () => req.destroy(new Error('timeout')));
		req.on('error', (e) => res({ status: 0, error: e.message }));
		req.end();
	});
}
const daemonSandboxes = async (sock = SOCK) => (await unixApi(sock, 'GET', '/v1/sandboxes')).body?.sandboxes ?? null;

// ---- raw HTTP to the front end, for what the SDK never sends -----------------------------------------
// resolves { status, headers, body (Buffer) } or { status: 0, error }
function raw({ method = 'POST', path, headers = {}, body, port = PORT, ms = 10000 }) {
	return new Promise((res) => {
		const req = http.request({ host: '127.0.0.1', port, method, path, headers, timeout: ms, agent: false }, (rsp) => {
			const chunks = [];
			rsp.on('data', (d) => chunks.push(d));
			rsp.on('end', () => res({ status: rsp.statusCode, headers: rsp.headers, body: Buffer.concat(chunks) }));
			rsp.on('error', (e) => res({ status: rsp.statusCode, headers: rsp.headers, body: Buffer.concat(chunks), error: e.message }));
		});
		req.on('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
		req.on('error', (e) => res({ status: 0, error: e.message }));
		if (body !== undefined) req.write(body);
		req.end();
	});
}
const json = (b) => { try { return JSON.parse(b.toString()); } catch { return undefined; } };
const showRaw = (r) => `HTTP ${r.status} ${r.headers?.['content-type'] ?? ''} ${r.error ?? ''} ${show(r.body?.toString().slice(0, 300))}`;
// a Connect envelope: flags, 4-byte big-endian length, payload
function envelope(flags, payload, len) {
	const p = Buffer.isBuffer(payload) ? payload : Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
	const h = Buffer.alloc(5);
	h[0] = flags;
	h.writeUInt32BE(len ?? p.length, 1);
	return Buffer.concat([h, p]);
}
function envelopes(buf) {
	const l = [];
	for (let i = 0; i + 5 <= buf.length;) {
		const n = buf.readUInt32BE(i + 1);
		l.push({ flags: buf[i], msg: json(buf.subarray(i + 5, i + 5 + n)) });
		i += 5 + n;
	}
	return l;
}
// the Connect protocol's HTTP status of each code (connectrpc.com/docs/protocol#error-codes)
const CONNECT_STATUS = { canceled: 499, unknown: 500, invalid_argument: 400, deadline_exceeded: 504,
	not_found: 404, already_exists: 409, permission_denied: 403, resource_exhausted: 429,
	failed_precondition: 400, aborted: 409, out_of_range: 400, unimplemented: 501, internal: 500,
	unavailable: 503, data_loss: 500, unauthenticated: 401 };
// a unary Connect error: the status of its code, application/json {"code","message"}
function unaryError(r, codes) {
	const b = json(r.body ?? Buffer.alloc(0));
	assert(b && typeof b.code === 'string' && typeof b.message === 'string' && codes.includes(b.code),
		`expected a Connect error {"code": ${codes.join(' | ')}, "message": "..."}`, `got: ${showRaw(r)}`);
	assert(r.status === CONNECT_STATUS[b.code], `expected HTTP ${CONNECT_STATUS[b.code]} for ${b.code}`, `got: ${showRaw(r)}`);
	match(r.headers['content-type'], /^application\/json/, 'Content-Type');
	return b;
}
// a stream's end: 200, application/connect+json, its last envelope the end of the stream
// with {"error": {"code", "message"}}
function streamError(r, codes) {
	const l = r.status === 200 ? envelopes(r.body) : [];
	const end = l[l.length - 1];
	const e = end?.msg?.error;
	assert(r.status === 200 && /^application\/connect\+json/.test(r.headers['content-type'] ?? '') &&
		end && (end.flags & 2) && e && typeof e.message === 'string' && codes.includes(e.code),
	`expected 200, application/connect+json, an end-of-stream envelope with {"error": {"code": ${codes.join(' | ')}, "message": "..."}}`,
	`got: ${showRaw(r)}`, `envelopes: ${show(l)}`);
	return e;
}

// ---- the SDK -----------------------------------------------------------------------------------
const made = new Set(); // every sandbox id this script made, killed at the end
async function create(...args) {
	const s = await Sandbox.create(...args);
	made.add(s.sandboxId);
	return s;
}
const bytes = (s) => new TextEncoder().encode(s);
const text = (chunks) => Buffer.concat(chunks.map((c) => Buffer.from(c))).toString('utf8');
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
// what a sandbox's access token is (the SDK keeps it for its requests)
const tokenOf = (s) => s.envdAccessToken;
const envdHeaders = (s, extra = {}) => ({ 'E2b-Sandbox-Id': s.sandboxId, 'X-Access-Token': tokenOf(s), ...extra });
async function listOf(p) { // all pages of a paginator
	const pages = [];
	for (let i = 0; i < 10 && p.hasNext; i++) pages.push(await p.nextItems());
	return pages;
}

// ==== control plane ================================================================================
let A; // a default sandbox, the commands' and files' playground
let B; // made with a template, timeout, metadata, envs
async function controlPlane() {
	await check('Sandbox.create(): a sandbox of the default template', async () => {
		A = await create();
		match(A.sandboxId, /^[A-Za-z0-9_-]{4,64}$/, 'sandboxId');
		assert(typeof tokenOf(A) === 'string' && tokenOf(A).length >= 32, `envdAccessToken: ${show(tokenOf(A))}`);
		eq((await A.getInfo()).templateId, 'base', 'getInfo().templateId');
	});
	await check("Sandbox.create('base', {timeoutMs, metadata, envs}): getInfo has them", async () => {
		const t0 = Date.now();
		B = await create('base', { timeoutMs: 120_000, metadata: { run: RUN, role: 'b' }, envs: { GREETING: 'hello from envs' } });
		const i = await B.getInfo();
		eq(pick(i, 'sandboxId', 'templateId', 'metadata', 'state'),
			{ sandboxId: B.sandboxId, templateId: 'base', metadata: { run: RUN, role: 'b' }, state: 'running' });
		assert(i.startedAt instanceof Date && i.startedAt >= t0 - 2000 && i.startedAt <= Date.now() + 2000,
			`startedAt ${show(i.startedAt)} is not between ${new Date(t0).toISOString()} and now`);
		const ttl = (i.endAt - i.startedAt) / 1000;
		assert(ttl > 117 && ttl < 123, `endAt - startedAt is ${ttl} s, expected 120`);
	});
	await check('Sandbox.create envs: a command sees them', async () => {
		eq((await need(B, 'B').commands.run('echo "$GREETING"')).stdout, 'hello from envs\n');
	});
	await check('Sandbox.connect(id): the same sandbox', async () => {
		const C = await Sandbox.connect(need(B, 'B').sandboxId);
		eq(C.sandboxId, B.sandboxId);
		await B.commands.run('echo connected >/tmp/conn');
		eq((await C.commands.run('cat /tmp/conn; echo "$GREETING"')).stdout, 'connected\nhello from envs\n');
	});
	await check('sbx.setTimeout(): getInfo().endAt moves, longer and shorter', async () => {
		need(B, 'B');
		const before = (await B.getInfo()).endAt;
		await B.setTimeout(600_000);
		const longer = (await B.getInfo()).endAt;
		const dl = (longer - Date.now()) / 1000;
		assert(longer > before && dl > 595 && dl < 602, `after setTimeout(600 s): endAt ${longer.toISOString()}, ${dl} s from now (was ${before.toISOString()})`);
		await B.setTimeout(90_000);
		const shorter = (await B.getInfo()).endAt;
		const ds = (shorter - Date.now()) / 1000;
		assert(ds > 85 && ds < 92, `after setTimeout(90 s): endAt ${shorter.toISOString()}, ${ds} s from now`);
	});

	await check('sbx.isRunning(): true', async () => {
		eq(await need(A, 'A').isRunning(), true);
	});
	await check('sbx.getMetrics(): one sample with CPU and memory', async () => {
		const m = await need(B, 'B').getMetrics();
		assert(Array.isArray(m) && m.length >= 1, `got ${show(m)}`);
		const x = m[m.length - 1];
		// memory use is measured by the sandbox's cgroup, which a rootless paddockd may not have
		const mem = process.getuid() === 0 ? x.memUsed > 0 : x.memUsed >= 0;
		assert(x.timestamp instanceof Date && !isNaN(x.timestamp) && Number.isInteger(x.cpuCount) && x.cpuCount >= 1 &&
			typeof x.cpuUsedPct === 'number' && mem && x.memTotal >= x.memUsed && x.memTotal > 0, `got ${show(x)}`);
	});

	let D;
	await check('Sandbox.list(): every sandbox, with its info', async () => {
		D = await create({ metadata: { run: RUN, role: 'd' } });
		const pages = await listOf(Sandbox.list());
		const all = pages.flat();
		const ids = all.map((x) => x.sandboxId);
		for (const s of [A, B, D]) assert(s && ids.includes(s.sandboxId), `${s?.sandboxId} is not in ${show(ids)}`);
		const b = all.find((x) => x.sandboxId === B.sandboxId);
		eq(pick(b, 'templateId', 'metadata', 'state'), { templateId: 'base', metadata: { run: RUN, role: 'b' }, state: 'running' }, 'B as listed');
		assert(b.startedAt instanceof Date && !isNaN(b.startedAt) && b.endAt > b.startedAt, `startedAt/endAt: ${show(pick(b, 'startedAt', 'endAt'))}`);
	});
	await check('Sandbox.list({query: {metadata}}): only the matching ones', async () => {
		const p = Sandbox.list({ query: { metadata: { run: RUN } } });
		const items = await p.nextItems();
		eq(items.map((x) => x.sandboxId).sort(), [need(B, 'B').sandboxId, need(D, 'D').sandboxId].sort());
		eq(p.hasNext, false, 'hasNext');
		const only = await Sandbox.list({ query: { metadata: { run: RUN, role: 'd' } } }).nextItems();
		eq(only.map((x) => x.sandboxId), [D.sandboxId], 'two keys');
	});
	await check('Sandbox.list({limit: 1}): one per page, nextItems() to the end', async () => {
		const pages = await listOf(Sandbox.list({ limit: 1, query: { metadata: { run: RUN } } }));
		assert(pages.every((p) => p.length <= 1), `a page holds more than 1: ${show(pages.map((p) => p.length))}`);
		eq(pages.flat().map((x) => x.sandboxId).sort(), [need(B, 'B').sandboxId, need(D, 'D').sandboxId].sort(), 'over all pages');
		assert(pages.length >= 2, `${pages.length} page(s)`);
	});
	await check('sbx.kill(): true, then the sandbox is gone for every call', async () => {
		need(D, 'D');
		eq(await D.kill(), true, 'kill()');
		await rejects(D.commands.run('true', { requestTimeoutMs: 5000 }), Error, 'a command in the killed sandbox');
		await rejects(D.getInfo(), SandboxNotFoundError, 'getInfo() of the killed sandbox');
		await rejects(Sandbox.connect(D.sandboxId), SandboxNotFoundError, 'Sandbox.connect() to it');
		eq(await Sandbox.kill(D.sandboxId), false, 'Sandbox.kill() again');
		const ids = (await Sandbox.list({ query: { metadata: { run: RUN } } }).nextItems()).map((x) => x.sandboxId);
		assert(!ids.includes(D.sandboxId), `still listed: ${show(ids)}`);
	});
	await check('sbx.isRunning() of a killed sandbox: false', async () => {
		eq(await need(D, 'D').isRunning(), false);
	});
	await check("Sandbox.kill('sb_unknownxxxxx'): false", async () => {
		eq(await Sandbox.kill('sb_unknownxxxxx'), false);
	});
	await check('Sandbox.getInfo of an unknown id: SandboxNotFoundError', async () => {
		await rejects(Sandbox.getInfo('sb_unknownxxxxx'), SandboxNotFoundError);
	});
	await check('Sandbox.create of an unknown template: a 404 SandboxError naming it', async () => {
		const e = await rejects(create('no-such-template-zz'), SandboxError);
		eq(e.statusCode, 404, 'statusCode');
		match(e.message, /no-such-template-zz/, 'message');
	});
	await check('Sandbox.create with unsupported options (autoResume): refused, naming them', async () => {
		const e = await rejects(create({ lifecycle: { onTimeout: 'pause', autoResume: true } }), SandboxError);
		match(e.message, /autoResume/);
	});
}

// ==== pause and resume =============================================================================
async function pauseResume() {
	let P;
	const n = async () => Number(await P.files.read('/home/user/n'));
	await check('sbx.pause(): true; a busy loop stops where it is, files still read', async () => {
		P = await create({ metadata: { run: RUN, role: 'p' } });
		await P.commands.run('i=0; while :; do i=$((i+1)); echo $i >/home/user/n.tmp; mv /home/user/n.tmp /home/user/n; done', { background: true });
		assert(await waitFor(async () => (await n().catch(() => 0)) > 0, 5000), 'the loop did not start');
		eq(await P.pause(), true, 'pause()');
		const a = await n();
		await new Promise((res) => setTimeout(res, 500));
		eq(await n(), a, 'the counter while paused');
	});
	await check('Sandbox.betaPause(id) of a paused sandbox: false', async () => {
		eq(await Sandbox.betaPause(need(P, 'P').sandboxId), false);
	});
	await check('paused: getInfo() and Sandbox.list({query: {state}}) say so', async () => {
		eq((await need(P, 'P').getInfo()).state, 'paused', 'getInfo().state');
		const paused = await Sandbox.list({ query: { state: ['paused'], metadata: { run: RUN } } }).nextItems();
		eq(paused.map((x) => [x.sandboxId, x.state]), [[P.sandboxId, 'paused']], 'state paused');
		const running = await Sandbox.list({ query: { state: ['running'], metadata: { run: RUN } } }).nextItems();
		assert(!running.some((x) => x.sandboxId === P.sandboxId), `listed as running: ${show(running)}`);
	});
	await check('paused: a command is refused, not held', async () => {
		const t0 = Date.now();
		await rejects(need(P, 'P').commands.run('true', { requestTimeoutMs: 10000 }), Error);
		assert(Date.now() - t0 < 5000, `the refusal took ${Date.now() - t0} ms`);
	});
	await check('Sandbox.connect(id) resumes a paused sandbox: the loop goes on, commands run', async () => {
		const a = await n();
		const C = await Sandbox.connect(need(P, 'P').sandboxId, { timeoutMs: 120_000 });
		eq((await C.getInfo()).state, 'running', 'getInfo().state');
		assert(await waitFor(async () => (await n()) > a, 5000), 'the counter did not move');
		eq((await C.commands.run('echo back')).stdout, 'back\n', 'a command');
		const ttl = ((await C.getInfo()).endAt - Date.now()) / 1000;
		assert(ttl > 110 && ttl < 125, `endAt is ${ttl} s away, expected the connect's 120`);
	});
	await check('Sandbox.pause of an unknown id: SandboxNotFoundError', async () => {
		await rejects(Sandbox.pause('sb_unknownxxxxx'), SandboxNotFoundError);
	});
	await check("lifecycle {onTimeout: 'pause'}: the timeout pauses it, connect() resumes it", async () => {
		const T = await create({ timeoutMs: 1000, metadata: { run: RUN, role: 't' }, lifecycle: { onTimeout: 'pause' } });
		eq((await T.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: false }, 'getInfo().lifecycle');
		await T.files.write('/home/user/kept', 'kept');
		const st = await waitFor(async () => (await T.getInfo()).state === 'paused', 6000, 200);
		assert(st, `state ${(await T.getInfo()).state} after its timeout`);
		const C = await Sandbox.connect(T.sandboxId);
		eq((await C.commands.run('cat /home/user/kept')).stdout, 'kept', 'its files after the resume');
		await C.kill();
	});
	if (P) await P.kill().catch(() => { });
}

// ==== commands ===================================================================================
async function commands() {
	const c = () => need(A, 'A').commands;
	await check('commands.run: stdout, stderr, exitCode', async () => {
		eq(pick(await c().run('echo hi; echo err >&2'), 'stdout', 'stderr', 'exitCode'), { stdout: 'hi\n', stderr: 'err\n', exitCode: 0 });
	});
	await check('commands.run: a non-zero exit throws CommandExitError with exitCode, stdout, stderr', async () => {
		const e = await rejects(c().run('echo out; echo oops >&2; exit 3'), CommandExitError);
		eq(pick(e, 'exitCode', 'stdout', 'stderr'), { exitCode: 3, stdout: 'out\n', stderr: 'oops\n' });
	});
	await check("CommandExitError.error is envd's 'exit status 3'", async () => {
		const e = await rejects(c().run('exit 3'), CommandExitError);
		eq(e.error, 'exit status 3', 'error');
		eq(e.message, 'exit status 3', 'message');
	});
	await check('commands.run: the default user, home and working directory', async () => {
		eq((await c().run('whoami; id -u; echo "$HOME"; pwd')).stdout, 'user\n1000\n/home/user\n/home/user\n');
	});
	await check('commands.run: envs and cwd', async () => {
		eq((await c().run('echo "$FOO|$BAR|$PWD"; pwd', { envs: { FOO: 'foo value', BAR: 'b=2' }, cwd: '/tmp' })).stdout, 'foo value|b=2|/tmp\n/tmp\n');
	});
	await check('commands.run: a relative cwd is under /home/user', async () => {
		await c().run('mkdir -p /home/user/sub');
		eq((await c().run('pwd', { cwd: 'sub' })).stdout, '/home/user/sub\n');
	});
	await check('commands.run: a missing cwd is InvalidArgumentError', async () => {
		await rejects(c().run('true', { cwd: '/no/such/dir' }), InvalidArgumentError);
	});
	await check("commands.run user 'root': refused, saying why (never quietly run as uid 1000)", async () => {
		const e = await rejects(c().run('id -u', { user: 'root' }), Error);
		match(e.message, /user 'root'.*uid 1000/);
	});
	await check("files.read user 'root': refused, saying why", async () => {
		const e = await rejects(need(A, 'A').files.read('/etc/hostname', { user: 'root' }), Error);
		match(e.message, /user 'root'/);
	});
	await check('GET /health naming no sandbox: 204, as envd answers', async () => {
		const r = await fetch(`${process.env.E2B_SANDBOX_URL}/health`);
		eq(r.status, 204);
	});
	await check('commands.run with an unknown user: refused', async () => {
		const e = await rejects(c().run('true', { user: 'nobody-zz' }), Error);
		match(e.message, /nobody-zz/);
	});
	await check('commands.run background: a handle, then wait()', async () => {
		const t0 = Date.now();
		const h = await c().run('sleep 2; echo bg', { background: true });
		assert(Date.now() - t0 < 1500, `run({background: true}) took ${Date.now() - t0} ms: it waited for the command`);
		assert(Number.isInteger(h.pid) && h.pid > 0, `pid: ${show(h.pid)}`);
		eq(pick(await h.wait(), 'stdout', 'exitCode'), { stdout: 'bg\n', exitCode: 0 });
	});
	await check('commands.run onStdout/onStderr: chunks in order, as they come', async () => {
		const outs = []; const errs = []; let firstAt = 0;
		const t0 = Date.now();
		const r = await c().run('for i in 1 2 3; do echo out$i; echo err$i >&2; done; sleep 0.7; echo last',
			{ onStdout: (d) => { firstAt ||= Date.now(); outs.push(d); }, onStderr: (d) => errs.push(d) });
		eq(outs.join(''), 'out1\nout2\nout3\nlast\n', 'onStdout, joined');
		eq(errs.join(''), 'err1\nerr2\nerr3\n', 'onStderr, joined');
		eq(r.stdout, outs.join(''), 'the result is what the callbacks saw');
		const lead = Date.now() - firstAt;
		assert(firstAt && lead > 400, `the first chunk came ${lead} ms before the end (${firstAt - t0} ms after the start): not streamed`);
	});
	await check('commands stdin: sendStdin (string and bytes), closeStdin, cat echoes it', async () => {
		const h = await c().run('cat', { background: true, stdin: true });
		await c().sendStdin(h.pid, 'hello ');
		await c().sendStdin(h.pid, bytes('stdin\n'));
		await c().closeStdin(h.pid);
		eq(pick(await h.wait(), 'stdout', 'exitCode'), { stdout: 'hello stdin\n', exitCode: 0 });
	});
	await check('commands.kill(pid): a sleep ends, wait() rejects with the signal', async () => {
		const h = await c().run('sleep 30', { background: true });
		eq(await c().kill(h.pid), true, 'kill()');
		const e = await rejects(h.wait(), CommandExitError, 'wait()');
		eq(pick(e, 'exitCode', 'error'), { exitCode: -1, error: 'signal: killed' });
		eq(await c().kill(h.pid), false, 'kill() of the ended process');
	});
	await check('commands.run: a process killed by a signal (kill -TERM $$)', async () => {
		const e = await rejects(c().run('echo before; kill -TERM $$; echo after'), CommandExitError);
		eq(pick(e, 'exitCode', 'stdout', 'error'), { exitCode: -1, stdout: 'before\n', error: 'signal: terminated' });
	});
	await check('commands.list(): a running background process, with cmd and args', async () => {
		const h = await c().run('sleep 31', { background: true });
		try {
			const l = await c().list();
			const p = l.find((x) => x.pid === h.pid);
			assert(p, `pid ${h.pid} is not in ${show(l)}`);
			eq(pick(p, 'cmd', 'args'), { cmd: '/bin/bash', args: ['-l', '-c', 'sleep 31'] });
		} finally {
			await c().kill(h.pid);
		}
		const l2 = await waitFor(async () => { const l = await c().list(); return l.some((x) => x.pid === h.pid) ? null : l; }, 3000);
		assert(l2, 'still listed 3 s after kill()');
	});
	await check('commands.connect(pid): re-attaches, gets the later output and the exit', async () => {
		const seen = [];
		const h = await c().run('echo one; sleep 0.8; echo two; sleep 0.3; exit 4', { background: true, onStdout: (d) => seen.push(d) });
		await waitFor(() => seen.join('').includes('one'), 3000);
		await h.disconnect();
		const later = [];
		const h2 = await c().connect(h.pid, { onStdout: (d) => later.push(d) });
		eq(h2.pid, h.pid, 'pid');
		const e = await rejects(h2.wait(), CommandExitError, "the re-attached handle's wait()");
		eq(e.exitCode, 4, 'exitCode');
		match(later.join(''), /two\n$/, 'output after re-attaching');
	});
	await check('commands.connect to an unknown pid: NotFoundError', async () => {
		await rejects(c().connect(999999), NotFoundError);
	});
	await check("commands.run timeoutMs 500 on 'sleep 5': TimeoutError, and the process is gone", async () => {
		const t0 = Date.now();
		await rejects(c().run('sleep 5.5', { timeoutMs: 500 }), TimeoutError);
		const took = Date.now() - t0;
		assert(took < 3000, `took ${took} ms`);
		const l = await waitFor(async () => { const l = await c().list(); return l.some((x) => x.args?.includes('sleep 5.5')) ? null : l; }, 3000);
		assert(l, `commands.list() still shows it: ${show(await c().list())}`);
		const left = below(/(^|\s)sleep 5\.5$/);
		assert(left.length === 0, 'still running on the host:', fmt(left));
	});
	await check('20 commands at once', async () => {
		const t0 = Date.now();
		const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => c().run(`sleep 1; echo n${i}`)));
		eq(rs.map((r) => r.stdout), Array.from({ length: 20 }, (_, i) => `n${i}\n`));
		const took = Date.now() - t0;
		assert(took < 10000, `took ${took} ms: not run in parallel (one after another is 20 s)`);
	}, 30000);
}

// ==== PTY ========================================================================================
async function pty() {
	const s = () => need(A, 'A');
	let h; const got = [];
	// what the terminal shows, without carriage returns and the shell's escape sequences
	// (bracketed paste mode, colours)
	const out = () => text(got).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
	// waits until the terminal's output after `from` matches re
	const expectOut = async (from, re, what) => {
		const ok = await waitFor(() => re.test(out().slice(from)), 5000);
		assert(ok, `${what}: expected the terminal to show ${re}`, `it shows: ${show(out().slice(from).slice(-400))}`);
	};
	await check('pty.create({cols, rows, onData}) and sendInput: echo $((6*7)) prints 42', async () => {
		h = await s().pty.create({ cols: 80, rows: 24, onData: (d) => got.push(d), timeoutMs: 0 });
		assert(Number.isInteger(h.pid) && h.pid > 0, `pid: ${show(h.pid)}`);
		const from = out().length;
		await s().pty.sendInput(h.pid, bytes('echo $((6*7))\n'));
		await expectOut(from, /(^|\n)42\n/, 'echo $((6*7))');
	});
	await check('pty: stty size is the size it was made with, a tty', async () => {
		need(h, 'the pty');
		const from = out().length;
		await s().pty.sendInput(h.pid, bytes('stty size; tty; echo "T=$TERM"\n'));
		await expectOut(from, /(^|\n)24 80\n\/dev\/pts\/\d+\n/, 'stty size; tty');
		await expectOut(from, /T=xterm-256color\n/, 'TERM');
	});
	await check('pty.resize(pid, {cols, rows}): stty size shows it', async () => {
		need(h, 'the pty');
		await s().pty.resize(h.pid, { cols: 100, rows: 30 });
		const from = out().length;
		await s().pty.sendInput(h.pid, bytes('stty size\n'));
		await expectOut(from, /(^|\n)30 100\n/, 'stty size after resize');
	});
	await check('pty.connect(pid): a second handle gets the output', async () => {
		need(h, 'the pty');
		const more = [];
		const h2 = await s().pty.connect(h.pid, { onData: (d) => more.push(d), timeoutMs: 0 });
		eq(h2.pid, h.pid, 'pid');
		await s().pty.sendInput(h.pid, bytes('echo again-$((2+3))\n'));
		const ok = await waitFor(() => /again-5/.test(text(more)), 5000);
		assert(ok, `the connected handle saw: ${show(text(more))}`);
		await h2.disconnect();
	});
	await check('pty.kill(pid): the shell ends, wait() ends', async () => {
		need(h, 'the pty');
		eq(await s().pty.kill(h.pid), true, 'kill()');
		const r = await Promise.race([h.wait().then(() => 'resolved', (e) => e), sleep(5000).then(() => 'hang')]);
		assert(r !== 'hang', 'wait() did not end within 5 s');
		assert(r instanceof CommandExitError && r.exitCode === -1, `wait() ended with ${show(r)}`);
		const l = await s().commands.list();
		assert(!l.some((p) => p.pid === h.pid), `still listed: ${show(l)}`);
	});
}

// ==== files ======================================================================================
async function files() {
	const f = () => need(A, 'A').files;
	const run = async (cmd) => (await A.commands.run(cmd)).stdout;
	await check('files.write text (parents made), read it back; the sandbox sees it', async () => {
		const i = await f().write('/home/user/t/a/hello.txt', 'héllo wörld\n');
		eq(pick(i, 'name', 'path', 'type'), { name: 'hello.txt', path: '/home/user/t/a/hello.txt', type: FileType.FILE });
		eq(await f().read('/home/user/t/a/hello.txt'), 'héllo wörld\n', 'read');
		eq(await run('cat /home/user/t/a/hello.txt; stat -c "%U %a" /home/user/t/a/hello.txt'), 'héllo wörld\nuser 644\n', 'in the sandbox');
	});
	await check('files.write/read a relative path: lands in /home/user', async () => {
		const i = await f().write('rel/x.txt', 'relative');
		eq(i.path, '/home/user/rel/x.txt', 'path');
		eq(await run('cat /home/user/rel/x.txt'), 'relative', 'in the sandbox');
		eq(await f().read('rel/x.txt'), 'relative', 'read');
	});
	const bin = new Uint8Array([0, 1, 2, 0x7f, 0x80, 0xfe, 0xff, 0x0a, 0]);
	await check("files.write Uint8Array, read {format: 'bytes'}", async () => {
		await f().write('bin/b.dat', bin);
		const r = await f().read('bin/b.dat', { format: 'bytes' });
		assert(r instanceof Uint8Array, `got ${show(r)}`);
		eq(Buffer.from(r).toString('hex'), Buffer.from(bin).toString('hex'));
		eq(await run('od -An -tx1 bin/b.dat | tr -d " \\n"'), Buffer.from(bin).toString('hex'), 'in the sandbox');
	});
	await check("files.write Blob, read {format: 'blob'}", async () => {
		await f().write('bin/blob.dat', new Blob([bin, 'tail']));
		const r = await f().read('bin/blob.dat', { format: 'blob' });
		assert(r instanceof Blob, `got ${show(r)}`);
		eq(Buffer.from(await r.arrayBuffer()).toString('hex'), Buffer.concat([Buffer.from(bin), Buffer.from('tail')]).toString('hex'));
	});
	await check("files.write ReadableStream, read {format: 'stream'}", async () => {
		const parts = ['stream ', 'of ', 'chunks\n'];
		const rs = new ReadableStream({ start(ctl) { for (const p of parts) ctl.enqueue(bytes(p)); ctl.close(); } });
		await f().write('bin/stream.txt', rs);
		const r = await f().read('bin/stream.txt', { format: 'stream' });
		const chunks = [];
		for await (const ch of r) chunks.push(ch);
		eq(text(chunks), parts.join(''));
	});
	await check('files.write an empty file, read it: empty', async () => {
		await f().write('empty.txt', '');
		eq(await f().read('empty.txt'), '');
		eq((await f().read('empty.txt', { format: 'bytes' })).length, 0, 'bytes');
	});
	await check('files.write([{path, data}, ...]): several files at once', async () => {
		const r = await f().write([{ path: 'multi/a.txt', data: 'A' }, { path: '/home/user/multi/b/b.txt', data: 'BB' }, { path: 'multi/c.bin', data: bin.buffer }]);
		assert(Array.isArray(r) && r.length === 3, `got ${show(r)}`);
		eq(r.map((x) => x.path).sort(), ['/home/user/multi/a.txt', '/home/user/multi/b/b.txt', '/home/user/multi/c.bin']);
		eq(await run('cat multi/a.txt multi/b/b.txt; stat -c %s multi/c.bin'), 'ABB9\n');
	});
	await check('files.write gzip, read gzip', async () => {
		await f().write('gz.txt', 'compressed '.repeat(100), { gzip: true });
		eq(await run('wc -c < gz.txt'), '1100\n', 'size in the sandbox');
		eq(await f().read('gz.txt', { gzip: true }), 'compressed '.repeat(100), 'read');
	});
	await check('files: a 50 MiB random file, written and read back, same sha256', async () => {
		const big = crypto.randomBytes(50 << 20);
		const want = sha(big);
		const i = await f().write('big.bin', big);
		eq(i.path, '/home/user/big.bin');
		eq(await run('sha256sum big.bin | cut -d" " -f1'), want + '\n', 'sha256sum in the sandbox');
		const r = await f().read('big.bin', { format: 'bytes' });
		eq(r.length, big.length, 'length read');
		eq(sha(r), want, 'sha256 read');
		await f().remove('big.bin');
	}, 60000);
	await check('files.list(dir): the entries; {depth: 2} one level deeper', async () => {
		await run('mkdir -p ls/sub/deeper && echo 1 > ls/a.txt && echo 2 > ls/sub/b.txt && echo 3 > ls/sub/deeper/c.txt');
		const l1 = await f().list('ls');
		eq(l1.map((e) => `${e.name} ${e.type} ${e.path}`).sort(), ['a.txt file /home/user/ls/a.txt', 'sub dir /home/user/ls/sub']);
		const l2 = await f().list('/home/user/ls', { depth: 2 });
		eq(l2.map((e) => e.path).sort(), ['/home/user/ls/a.txt', '/home/user/ls/sub', '/home/user/ls/sub/b.txt', '/home/user/ls/sub/deeper']);
	});
	await check('files.getInfo: name, type, path, size, mode, permissions, owner, group, modifiedTime', async () => {
		const t0 = Date.now();
		await f().write('info/f.txt', '12345');
		await run('chmod 640 info/f.txt');
		const i = await f().getInfo('info/f.txt');
		eq(pick(i, 'name', 'type', 'path', 'size', 'mode', 'permissions', 'owner', 'group'),
			{ name: 'f.txt', type: FileType.FILE, path: '/home/user/info/f.txt', size: 5, mode: 0o640, permissions: '-rw-r-----', owner: 'user', group: 'user' });
		assert(i.modifiedTime instanceof Date && Math.abs(i.modifiedTime - t0) < 10000, `modifiedTime ${show(i.modifiedTime)}`);
		const d = await f().getInfo('info');
		eq(pick(d, 'name', 'type', 'path'), { name: 'info', type: FileType.DIR, path: '/home/user/info' });
	});
	await check('files.getInfo of a symlink: its type and symlinkTarget', async () => {
		await run('ln -sf f.txt info/link');
		const i = await f().getInfo('info/link');
		eq(pick(i, 'name', 'type', 'path'), { name: 'link', type: FileType.SYMLINK, path: '/home/user/info/link' });
		match(i.symlinkTarget, /^(\/home\/user\/info\/)?f\.txt$/, 'symlinkTarget');
	});
	await check('files.exists: true, false', async () => {
		eq([await f().exists('info/f.txt'), await f().exists('info/nope.txt'), await f().exists('/')], [true, false, true]);
	});
	await check('files.rename: moved, its new EntryInfo', async () => {
		await f().write('mv/old.txt', 'moving');
		const i = await f().rename('mv/old.txt', 'mv/new.txt');
		eq(pick(i, 'name', 'path', 'type'), { name: 'new.txt', path: '/home/user/mv/new.txt', type: FileType.FILE });
		eq([await f().exists('mv/old.txt'), await f().read('mv/new.txt')], [false, 'moving']);
	});
	await check('files.remove: a file, a directory tree', async () => {
		await f().remove('mv/new.txt');
		await f().remove('/home/user/ls');
		eq([await f().exists('mv/new.txt'), await f().exists('ls')], [false, false]);
	});
	await check('files.makeDir: true, then false when it exists (parents made)', async () => {
		eq(await f().makeDir('mk/a/b'), true, 'first');
		eq(await f().makeDir('mk/a/b'), false, 'second');
		eq((await f().getInfo('mk/a/b')).type, FileType.DIR);
	});
	await check('files: a missing file is FileNotFoundError (a NotFoundError): read, getInfo, list, rename', async () => {
		const e = await rejects(f().read('nope/missing.txt'), FileNotFoundError, 'read');
		assert(e instanceof NotFoundError, 'not a NotFoundError');
		await rejects(f().getInfo('nope/missing.txt'), FileNotFoundError, 'getInfo');
		await rejects(f().list('nope'), FileNotFoundError, 'list');
		await rejects(f().rename('nope/missing.txt', 'x'), FileNotFoundError, 'rename');
	});
	await check('files: bad paths are InvalidArgumentError: list a file, read a directory, makeDir over a file', async () => {
		await rejects(f().list('info/f.txt'), InvalidArgumentError, 'list of a file');
		await rejects(f().read('info'), InvalidArgumentError, 'read of a directory');
		await rejects(f().makeDir('info/f.txt'), InvalidArgumentError, 'makeDir where a file is');
	});
	await check('files: a file the sandbox user may not read is refused', async () => {
		await run('echo secret > /tmp/private; chmod 000 /tmp/private');
		await rejects(f().read('/tmp/private'), SandboxError, 'read of a mode 000 file');
	});
	await check("files: a symlink to / leads to the sandbox's /, never the host's", async () => {
		const esc = `e2b-escape-${RUN}`;
		await run('ln -sfn / /home/user/rootlink');
		await f().write(`rootlink/tmp/${esc}`, 'inside');
		assert(!fs.existsSync(`/tmp/${esc}`), `/tmp/${esc} appeared on the host`);
		eq(await run(`cat /tmp/${esc}`), 'inside', "the sandbox's /tmp");
	});

	// signed URLs, fetched exactly as the SDK makes them (E2B_SANDBOX_URL/files?...): no Host
	// naming the sandbox, no token; the signature alone says which sandbox
	await check('sbx.downloadUrl(): a plain fetch of the URL reads the file', async () => {
		const r = await fetch(await need(A, 'A').downloadUrl('t/a/hello.txt'));
		eq([r.status, await r.text()], [200, 'héllo wörld\n']);
	});
	await check('sbx.uploadUrl(): a plain fetch POST of a form writes the file', async () => {
		const form = new FormData();
		form.append('file', new Blob(['uploaded by URL']), 'up.txt');
		const r = await fetch(await need(A, 'A').uploadUrl('signed/up.txt'), { method: 'POST', body: form });
		assert(r.status === 200, `${r.status} ${await r.text()}`);
		eq(await f().read('signed/up.txt'), 'uploaded by URL');
	});
	await check("signed URLs: one sandbox's URL reads that sandbox, not another's", async () => {
		const other = await Sandbox.create({ metadata: { run: RUN } });
		try {
			await other.files.write('t/a/hello.txt', 'from the other');
			eq(await (await fetch(await need(A, 'A').downloadUrl('t/a/hello.txt'))).text(), 'héllo wörld\n', 'A');
			eq(await (await fetch(await other.downloadUrl('t/a/hello.txt'))).text(), 'from the other', 'the other');
		} finally {
			await other.kill();
		}
	}, 30000);
	await check('signed URLs: a tampered, an expired or a missing signature is 401', async () => {
		const good = new URL(await need(A, 'A').downloadUrl('t/a/hello.txt'));
		const tampered = new URL(good);
		tampered.searchParams.set('path', 'rel/x.txt');
		const expired = new URL(await A.downloadUrl('t/a/hello.txt', { useSignatureExpiration: -10 }));
		const unsigned = new URL(good);
		unsigned.searchParams.delete('signature');
		const st = [];
		for (const u of [tampered, expired, unsigned]) st.push((await fetch(u)).status);
		// unsigned, without a token or sandbox id, names no sandbox at all: 400 saying so
		eq(st, [401, 401, 400], 'tampered, expired, unsigned');
	});

	// watchDir
	await check('files.watchDir: create, write, rename, remove events', async () => {
		await f().makeDir('w');
		const ev = [];
		const w = await f().watchDir('w', (e) => ev.push(e), { timeoutMs: 0 });
		try {
			await f().write('w/new.txt', 'x');
			await f().rename('w/new.txt', 'w/renamed.txt');
			await f().remove('w/renamed.txt');
			const has = (type, name) => ev.some((e) => e.type === type && e.name === name);
			// as envd (fsnotify): the old name is "rename", the new name "create"
			const want = [[FilesystemEventType.CREATE, 'new.txt'], [FilesystemEventType.WRITE, 'new.txt'],
				[FilesystemEventType.RENAME, 'new.txt'], [FilesystemEventType.CREATE, 'renamed.txt'],
				[FilesystemEventType.REMOVE, 'renamed.txt']];
			const ok = await waitFor(() => want.every(([t, n]) => has(t, n)), 5000);
			assert(ok, `expected ${show(want)}`, `got ${show(ev.map((e) => [e.type, e.name]))}`);
			assert(!has(FilesystemEventType.RENAME, 'renamed.txt'), 'the new name came as rename too', show(ev.map((e) => [e.type, e.name])));
		} finally {
			await w.stop();
		}
	});
	await check('files.watchDir recursive: a nested directory\'s file', async () => {
		await f().makeDir('w2/nested/deeper');
		const ev = [];
		const w = await f().watchDir('w2', (e) => ev.push(e), { recursive: true, timeoutMs: 0 });
		try {
			await f().write('w2/nested/deeper/deep.txt', 'deep');
			const ok = await waitFor(() => ev.some((e) => e.name === 'nested/deeper/deep.txt' && e.type === FilesystemEventType.CREATE), 5000);
			assert(ok, `got ${show(ev.map((e) => [e.type, e.name]))}`);
		} finally {
			await w.stop();
		}
	});
	await check('files.watchDir of a missing directory: FileNotFoundError', async () => {
		await rejects(f().watchDir('no-such-dir', () => { }), FileNotFoundError);
	});
	await check('files.watchDir onExit: called once when stopped', async () => {
		let exits = 0;
		const w = await f().watchDir('w', () => { }, { timeoutMs: 0, onExit: () => { exits++; } });
		await w.stop();
		await waitFor(() => exits > 0, 3000);
		eq(exits, 1, 'onExit calls');
	});
}

// ==== getHost ====================================================================================
function viaHost(host, path = '/') {
	return raw({ method: 'GET', path, headers: { Host: host }, ms: 5000 });
}
async function getHost() {
	let srv;
	await check('getHost(8000): a server in the sandbox answers through `{port}-{id}.{domain}`', async () => {
		need(A, 'A');
		const host = A.getHost(8000);
		eq(host, `8000-${A.sandboxId}.${DOMAIN}`, 'getHost');
		const tok = `served-by-${A.sandboxId}-${RUN}`;
		await A.files.write('/home/user/www/index.html', tok + '\n');
		srv = await A.commands.run('cd /home/user/www && exec python3 -m http.server 8000 --bind 127.0.0.1', { background: true, timeoutMs: 0 });
		const r = await waitFor(async () => { const r = await viaHost(host); return r.status === 200 ? r : null; }, 10000, 200);
		assert(r, `no 200 within 10 s; the last answer: ${showRaw(await viaHost(host))}`, `server output: ${show(srv.stderr.slice(-300))}`);
		eq(r.body.toString(), tok + '\n', 'body');
		const r2 = await viaHost(`${host}:${PORT}`, '/index.html');
		eq([r2.status, r2.body.toString()], [200, tok + '\n'], 'with a port in Host');
	});
	await check('getHost: a port nothing listens on is a 502, an unknown sandbox a 404', async () => {
		need(A, 'A');
		const r = await viaHost(A.getHost(8009));
		eq(r.status, 502, `${showRaw(r)}`);
		const u = await viaHost(`8000-sb_unknownxxxxx.${DOMAIN}`);
		eq(u.status, 404, `${showRaw(u)}`);
	});
	if (srv) await srv.kill().catch(() => { });
}

// ==== what the SDK never sends ====================================================================
async function protocol() {
	const s = () => need(A, 'A');
	const unary = (method, body, extra = {}) => raw({ path: `/process.Process/${method}`,
		headers: envdHeaders(s(), { 'Content-Type': 'application/json', ...extra }), body });
	const stream = (method, body, extra = {}, svc = 'process.Process') => raw({ path: `/${svc}/${method}`,
		headers: envdHeaders(s(), { 'Content-Type': 'application/connect+json', ...extra }), body });
	// the server still answers a normal call
	const serving = async () => {
		const r = await unary('List', '{}');
		assert(r.status === 200 && Array.isArray(json(r.body)?.processes), `after it, List answers ${showRaw(r)}`);
	};
	await check('raw: a normal unary call (List) is 200 application/json', async () => {
		const r = await unary('List', '{}');
		eq([r.status, r.headers['content-type']?.split(';')[0]], [200, 'application/json'], showRaw(r));
	});
	await check('raw: a stream error is 200 + one end-of-stream envelope (Connect to an unknown pid: not_found)', async () => {
		const r = await stream('Connect', envelope(0, { process: { pid: 999999 } }));
		streamError(r, ['not_found']);
		eq(envelopes(r.body).length, 1, 'envelopes');
	});
	await check('raw: a tagged Start is listed with its tag', async () => {
		const ac = new AbortController();
		const req = http.request({ host: '127.0.0.1', port: PORT, method: 'POST', path: '/process.Process/Start', signal: ac.signal,
			headers: envdHeaders(s(), { 'Content-Type': 'application/connect+json' }) });
		req.on('error', () => { });
		req.end(envelope(0, { process: { cmd: '/bin/sleep', args: ['32'] }, tag: `tag-${RUN}` }));
		try {
			const p = await waitFor(async () => (await s().commands.list()).find((x) => x.tag === `tag-${RUN}`), 5000);
			assert(p, `not listed: ${show(await s().commands.list())}`);
			eq(pick(p, 'cmd', 'args', 'tag'), { cmd: '/bin/sleep', args: ['32'], tag: `tag-${RUN}` });
			await s().commands.kill(p.pid);
		} finally {
			ac.abort();
		}
	});
	await check('raw: a broken envelope (3 bytes): 200 + end-of-stream invalid_argument; still serving', async () => {
		streamError(await stream('Start', Buffer.from([0, 0, 0])), ['invalid_argument']);
		await serving();
	});
	await check('raw: an envelope length over 4 MiB: resource_exhausted; still serving', async () => {
		streamError(await stream('Start', envelope(0, '{}', (4 << 20) + 1)), ['resource_exhausted']);
		await serving();
	});
	await check('raw: an end-of-stream flag in a request: invalid_argument; still serving', async () => {
		streamError(await stream('Start', envelope(2, { process: { cmd: '/bin/true' } })), ['invalid_argument']);
		await serving();
	});
	await check('raw: a compressed envelope (never negotiated): an error; still serving', async () => {
		streamError(await stream('Start', envelope(1, { process: { cmd: '/bin/true' } })), ['unimplemented', 'invalid_argument', 'internal']);
		await serving();
	});
	await check('raw: bad JSON: invalid_argument (unary 400; in a stream envelope, end of stream); still serving', async () => {
		unaryError(await unary('List', '{nope'), ['invalid_argument']);
		streamError(await stream('Start', envelope(0, '{"process": ')), ['invalid_argument']);
		await serving();
	});
	await check('raw: a JSON array instead of an object: invalid_argument; still serving', async () => {
		unaryError(await unary('List', '[]'), ['invalid_argument']);
		await serving();
	});
	await check('raw: a field of the wrong type (pid as a string of letters): invalid_argument', async () => {
		unaryError(await unary('SendSignal', JSON.stringify({ process: { pid: 'abc' }, signal: 'SIGNAL_SIGKILL' })), ['invalid_argument']);
		await serving();
	});
	await check('raw: Content-Type application/proto: 415; still serving', async () => {
		const r = await unary('List', '', { 'Content-Type': 'application/proto' });
		eq(r.status, 415, showRaw(r));
		await serving();
	});
	await check('raw: an unknown method (/process.Process/Nope): unimplemented; still serving', async () => {
		const r = await unary('Nope', '{}');
		const b = json(r.body);
		// Connect's table gives unimplemented 501; a server without the route answers 404,
		// which a Connect client reads as unimplemented too
		assert(b?.code === 'unimplemented' && [404, 501].includes(r.status), `expected 404 or 501 {"code": "unimplemented"}`, showRaw(r));
		await serving();
	});
	await check('raw: an unknown service path: 404; still serving', async () => {
		const r = await raw({ path: '/nope.Nope/Method', headers: envdHeaders(s(), { 'Content-Type': 'application/json', 'X-API-Key': 'any' }), body: '{}' });
		eq(r.status, 404, showRaw(r));
		await serving();
	});
	await check('raw: no E2b-Sandbox-Id: a Connect error (invalid_argument); still serving', async () => {
		const r = await raw({ path: '/process.Process/List', headers: { 'Content-Type': 'application/json', 'X-Access-Token': tokenOf(s()) }, body: '{}' });
		unaryError(r, ['invalid_argument']);
		await serving();
	});
	await check('raw: an unknown E2b-Sandbox-Id: not_found', async () => {
		const r = await raw({ path: '/process.Process/List', headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': 'sb_unknownxxxxx', 'X-Access-Token': tokenOf(s()) }, body: '{}' });
		unaryError(r, ['not_found']);
	});
	await check('raw: a wrong X-Access-Token, or none: unauthenticated 401; still serving', async () => {
		unaryError(await unary('List', '{}', { 'X-Access-Token': 'f'.repeat(64) }), ['unauthenticated']);
		const h = envdHeaders(s(), { 'Content-Type': 'application/json' });
		delete h['X-Access-Token'];
		unaryError(await raw({ path: '/process.Process/List', headers: h, body: '{}' }), ['unauthenticated']);
		// a stream: the end of the stream, or envd's HTTP 401 (its token check is HTTP
		// middleware, before Connect); a Connect client reads both as unauthenticated
		const r = await stream('Start', envelope(0, { process: { cmd: '/bin/true' } }), { 'X-Access-Token': 'f'.repeat(64) });
		if (r.status === 200) streamError(r, ['unauthenticated']);
		else unaryError(r, ['unauthenticated']);
		await serving();
	});
	await check("raw: another sandbox's access token: unauthenticated", async () => {
		const other = need(B, 'B');
		unaryError(await unary('List', '{}', { 'X-Access-Token': tokenOf(other) }), ['unauthenticated']);
	});
	await check('SDK: a sandbox handle with a wrong access token gets AuthenticationError', async () => {
		const bad = new Sandbox({ sandboxId: s().sandboxId, envdAccessToken: 'f'.repeat(64), envdVersion: '0.6.4',
			apiUrl: process.env.E2B_API_URL, sandboxUrl: process.env.E2B_SANDBOX_URL, apiKey: process.env.E2B_API_KEY, domain: DOMAIN });
		await rejects(bad.commands.run('true'), AuthenticationError, 'commands.run');
		await rejects(bad.files.list('/'), AuthenticationError, 'files.list');
		await rejects(bad.files.read('/etc/hostname'), AuthenticationError, 'files.read');
	});
	await check('raw: GET on an RPC path: an HTTP error with a Connect error body; still serving', async () => {
		const r = await raw({ method: 'GET', path: '/process.Process/List', headers: envdHeaders(s()) });
		assert(r.status >= 400 && r.status < 600 && typeof json(r.body)?.code === 'string', showRaw(r));
		await serving();
	});
	await check('raw: a 100 KiB header: a 4xx answer; still serving', async () => {
		const r = await unary('List', '{}', { 'X-Huge': 'x'.repeat(100 << 10) });
		assert(r.status >= 400 && r.status < 500, showRaw(r));
		await serving();
	});
	await check('raw: Connect-Timeout-Ms abc: invalid_argument; still serving', async () => {
		unaryError(await unary('List', '{}', { 'Connect-Timeout-Ms': 'abc' }), ['invalid_argument']);
		streamError(await stream('Start', envelope(0, { process: { cmd: '/bin/true' } }), { 'Connect-Timeout-Ms': 'abc' }), ['invalid_argument']);
		await serving();
	});
	await check('raw: a control-plane body that is not JSON: 400 {"code": 400, "message"}', async () => {
		const r = await raw({ path: '/v2/sandboxes', headers: { 'Content-Type': 'application/json', 'X-API-Key': process.env.E2B_API_KEY }, body: '{nope' });
		const b = json(r.body);
		assert(r.status === 400 && b?.code === 400 && typeof b.message === 'string', showRaw(r));
	});
	await check('raw: the control plane without X-API-Key: 401', async () => {
		const r = await raw({ method: 'GET', path: '/v2/sandboxes' });
		eq(r.status, 401, showRaw(r));
	});
	await check('after all of it, the SDK still works', async () => {
		eq((await s().commands.run('echo still serving')).stdout, 'still serving\n');
	});
}

// ==== the SDK's debug mode ==========================================================================
async function debugMode() {
	const before = new Set(((await daemonSandboxes()) ?? []).map((x) => x.id));
	const saved = process.env.E2B_DEBUG;
	process.env.E2B_DEBUG = 'true';
	try {
		await check('E2B_DEBUG=true: Sandbox.create() is debug_sandbox_id, a command runs in it', async () => {
			const s = await Sandbox.create();
			eq(s.sandboxId, 'debug_sandbox_id', 'sandboxId');
			eq((await s.commands.run('echo debug; id -u')).stdout, 'debug\n1000\n');
			await s.files.write('dbg.txt', 'in debug mode');
			eq(await s.files.read('dbg.txt'), 'in debug mode', 'files');
			const again = await Sandbox.create();
			eq((await again.commands.run('cat dbg.txt')).stdout, 'in debug mode', 'the same default sandbox the second time');
		});
	} finally {
		if (saved === undefined) delete process.env.E2B_DEBUG; else process.env.E2B_DEBUG = saved;
	}
	await check("debug mode made one sandbox, in paddockd's API; deleted through it", async () => {
		const l = need(await daemonSandboxes(), "paddockd's list");
		const dbg = l.filter((x) => !before.has(x.id));
		const deleted = [];
		for (const x of dbg) deleted.push((await unixApi(SOCK, 'DELETE', `/v1/sandboxes/${x.id}`)).status);
		eq(dbg.length, 1, `debug sandboxes (${dbg.map((x) => x.id).join(' ')})`);
		assert(deleted.every((st) => st >= 200 && st < 300), `DELETE: ${show(deleted)}`);
	});
}

// ==== API keys and tenants: a second paddockd with --tokens ===========================================
function freePort() {
	return new Promise((res, rej) => {
		const s = net.createServer();
		s.on('error', rej);
		s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
	});
}
async function tenants() {
	if (!PADDOCKD) { fail('tenants: PADDOCKD names paddockd'); return; }
	const dir = fs.mkdtempSync(`${TMP}/tok.`);
	const sock = `${dir}/sock`;
	const tok = { alice: `alice-${crypto.randomBytes(12).toString('hex')}`, bob: `bob-${crypto.randomBytes(12).toString('hex')}` };
	fs.writeFileSync(`${dir}/tokens`, `alice ${tok.alice}\nbob ${tok.bob}\n`, { mode: 0o600 });
	let log = '';
	// --tokens goes with --listen in paddockd (every TCP client is a tenant)
	const d = spawn(PADDOCKD, ['--socket', sock, '--state-dir', `${dir}/state`, '--tokens', `${dir}/tokens`,
		'--listen', `127.0.0.1:${await freePort()}`, '--e2b', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
	d.stderr.on('data', (x) => { log += x; process.stderr.write(x); });
	const exited = new Promise((r) => d.on('exit', (code, sig) => r({ code, sig })));
	try {
		const port = await waitFor(() => Number(/e2b on 127\.0\.0\.1:(\d+)/.exec(log)?.[1]), 5000);
		if (!await check('--tokens: a second paddockd with --e2b starts', async () => assert(port, `its log: ${log}`))) return;
		const url = `http://127.0.0.1:${port}`;
		const as = (who) => ({ apiKey: tok[who] ?? who, apiUrl: url, sandboxUrl: url, domain: DOMAIN });
		let AL;
		await check('--tokens: a wrong API key is AuthenticationError (create, list, kill)', async () => {
			await rejects(Sandbox.create(as('wrong-key-0123456789')), AuthenticationError, 'create');
			await rejects(Sandbox.list(as('wrong-key-0123456789')).nextItems(), AuthenticationError, 'list');
			await rejects(Sandbox.kill('sb_unknownxxxxx', as('wrong-key-0123456789')), AuthenticationError, 'kill');
		});
		await check('--tokens: a tenant key creates and runs', async () => {
			AL = await Sandbox.create({ ...as('alice'), metadata: { owner: 'alice' } });
			eq((await AL.commands.run('echo alice')).stdout, 'alice\n');
		});
		await check("--tokens: another tenant cannot see, connect to, read or kill it", async () => {
			need(AL, "alice's sandbox");
			const ids = (await listOf(Sandbox.list(as('bob')))).flat().map((x) => x.sandboxId);
			assert(!ids.includes(AL.sandboxId), `bob lists ${show(ids)}`);
			await rejects(Sandbox.getInfo(AL.sandboxId, as('bob')), SandboxNotFoundError, "bob's getInfo");
			await rejects(Sandbox.connect(AL.sandboxId, as('bob')), SandboxNotFoundError, "bob's connect");
			eq(await Sandbox.kill(AL.sandboxId, as('bob')), false, "bob's kill");
			await rejects(Sandbox.setTimeout(AL.sandboxId, 10_000, as('bob')), SandboxNotFoundError, "bob's setTimeout");
			eq((await AL.commands.run('echo still alice')).stdout, 'still alice\n', 'alive after all that');
			const mine = (await listOf(Sandbox.list(as('alice')))).flat().map((x) => x.sandboxId);
			eq(mine, [AL.sandboxId], "alice's list");
		});
		await check('--tokens: no debug sandbox (debug_sandbox_id is not_found)', async () => {
			const r = await raw({ port, path: '/process.Process/List', headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': 'debug_sandbox_id' }, body: '{}' });
			unaryError(r, ['not_found']);
		});
		await check('--tokens: the tenant kills its sandbox', async () => {
			eq(await need(AL, "alice's sandbox").kill(), true);
		});
	} finally {
		const left = (await daemonSandboxes(sock)) ?? [];
		for (const x of left) await unixApi(sock, 'DELETE', `/v1/sandboxes/${x.id}`);
		if (left.length) fail('--tokens: no sandbox left in the second paddockd', `left: ${show(left.map((x) => x.id))}`);
		const below2 = descendants(d.pid);
		d.kill('SIGTERM');
		const ex = await Promise.race([exited, sleep(10000).then(() => null)]);
		await check('--tokens: the second paddockd exits 0 on SIGTERM, nothing of it left', async () => {
			assert(ex && ex.code === 0, `exit: ${show(ex)}`);
			const alive = await waitFor(() => { const now = procs(); const l = below2.filter((p) => now.get(p.pid)?.start === p.start && now.get(p.pid)?.state !== 'Z'); return l.length ? null : true; }, 5000);
			assert(alive, 'left:', fmt(below2));
		});
		if (!ex) d.kill('SIGKILL');
	}
}

// ==== the end: nothing left ========================================================================
async function cleanup() {
	for (const id of made) await Sandbox.kill(id).catch(() => { });
	await check('every sandbox of this run is gone from paddockd (its unix API)', async () => {
		const l = await waitFor(async () => { const l = await daemonSandboxes(); return l && l.length === 0 ? l : null; }, 5000, 200);
		assert(l, `left: ${show(await daemonSandboxes())}`);
	});
	await check('no process is left below paddockd', async () => {
		const ok = await waitFor(() => descendants(DPID).length === 0, 5000, 100);
		assert(ok, fmt(descendants(DPID)));
	});
}

// ---- main --------------------------------------------------------------------------------------------
process.on('unhandledRejection', (e) => diag(`unhandled rejection: ${e?.stack || show(e)}`));
// a hung server must not hang the suite: the whole run is bounded
setTimeout(() => { fail(`client.mjs ran past 240 s; stopping`); process.exit(0); }, 240000).unref();
if (!PORT) {
	fail('E2B_PORT names the front end\'s port');
	process.exit(0);
}
// E2B_ONLY=commands,pty (with the control plane, which makes the sandboxes, and cleanup): a
// few scenarios, when chasing one failure by hand
const only = process.env.E2B_ONLY ? ['control plane', ...process.env.E2B_ONLY.split(','), 'cleanup'] : null;
for (const [name, fn] of [['control plane', controlPlane], ['pause', pauseResume], ['commands', commands], ['pty', pty], ['files', files],
	['getHost', getHost], ['protocol', protocol], ['debug mode', debugMode], ['tenants', tenants], ['cleanup', cleanup]]) {
	if (only && !only.includes(name)) continue;
	const t0 = Date.now();
	try {
		await fn();
	} catch (e) {
		fail(`${name}: ran to its end`, e?.stack || show(e));
	}
	diag(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
diag(`${counts.pass} passed, ${counts.fail} failed in ${((Date.now() - T0) / 1000).toFixed(1)} s`);
process.exit(0);
