// E2B's Sandbox.create('NAME') on a template stored in paddockd (POST /v1/templates), with
// the official SDK unchanged: test-templates.sh makes the template, this checks what the
// sandbox made from it has. One line per check (harness.mjs).
import { Sandbox } from 'e2b';
import { counts, eq, check, need } from './harness.mjs';

let S;
await check("Sandbox.create('py-tools'): a template stored in paddockd", async () => {
	S = await Sandbox.create('py-tools', { envs: { FROM_SDK: 'sdk' } });
	eq((await S.getInfo()).templateId, 'py-tools', 'getInfo().templateId');
});
await check("...its commands see the template's env and the SDK's envs", async () => {
	eq((await need(S, 'S').commands.run('echo "$TOOL $FROM_SDK"')).stdout, 'hammer sdk\n');
});
await check("...and has the template's memory limit (the sandbox's /proc/meminfo)", async () => {
	eq((await need(S, 'S').commands.run("grep MemTotal /proc/meminfo")).stdout, 'MemTotal:         262144 kB\n');
});
await check("Sandbox.create('no-such'): the SDK's not-found error", async () => {
	const e = await Sandbox.create('no-such').then(() => null, (x) => x);
	eq(/not found/.test(String(e?.message)), true, `error: ${e?.message}`);
});
if (S) await S.kill();
process.exit(counts.fail ? 1 : 0);
