// The cross-front-end scenarios (test-frontends.sh) through the official E2B SDK, as a user
// writes them: output over limits.output, a command past limits.timeout_s, stdin, binary
// output, a command that outlives its client (E2B's: a process outlives the stream that
// started it, disconnect() and connect(pid); MARKER in the environment names it). The sandbox comes from paddockd's E2B endpoint, template "base" (the test's
// --e2b-templates: limits.output 64K, limits.timeout_s 3). One JSON line per scenario:
// {"scenario", "outcome": {...}} for test-frontends.sh to compare with the other front ends.
import { CommandExitError, Sandbox, TimeoutError } from '../e2b/node_modules/e2b/dist/index.mjs';

const out = (scenario, outcome) => process.stdout.write(JSON.stringify({ scenario, outcome }) + '\n');

async function settle(p) {
	try {
		return { value: await p };
	} catch (e) {
		return { error: e };
	}
}

const sb = await Sandbox.create({ timeoutMs: 120_000 });
try {
	let r = await settle(sb.commands.run("head -c 200000 /dev/zero | tr '\\0' a"));
	let e = r.error;
	out('output', {
		ended: e instanceof CommandExitError,
		error: e?.error ?? null,
		stdout_bytes: (e?.stdout ?? r.value?.stdout ?? '').length,
	});

	r = await settle(sb.commands.run('sleep 30', { timeoutMs: 2000 }));
	out('timeout', { timeout_error: r.error instanceof TimeoutError, message: r.error?.message ?? null });

	const h = await sb.commands.run('cat', { background: true, stdin: true });
	await sb.commands.sendStdin(h.pid, 'hello\n');
	await sb.commands.closeStdin(h.pid);
	const done = await h.wait();
	out('stdin', { stdout: done.stdout, exit_code: done.exitCode });

	r = await settle(sb.commands.run("printf '\\000\\377\\001hi'"));
	out('binary', { stdout: r.value?.stdout ?? null, exit_code: r.value?.exitCode ?? null });

	const g = await sb.commands.run(`sleep ${process.env.MARKER}`, { background: true });
	await g.disconnect();
	await new Promise((res) => setTimeout(res, 1500));
	const left = (await sb.commands.list()).some((p) => p.pid === g.pid);
	const again = await sb.commands.connect(g.pid);
	const killed = await sb.commands.kill(g.pid);
	r = await settle(again.wait());
	out('gone', { left_running: left, killed, exit_code: r.error?.exitCode ?? r.value?.exitCode ?? null });
} finally {
	await sb.kill();
}
