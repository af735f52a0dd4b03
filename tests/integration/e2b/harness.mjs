// The checks of the E2B SDK tests (client.mjs, code-interpreter.mjs): one line per check,
// "ok - DESC" or "not ok - DESC" (then "# " diagnostics), which the shell test numbers into
// TAP. Every check is bounded in time and never throws.
import { inspect, isDeepStrictEqual } from 'node:util';

// ---- output and assertions ------------------------------------------------------------------
export const out = (s) => process.stdout.write(s + '\n');
export const show = (v) => inspect(v, { depth: 6, breakLength: Infinity, maxStringLength: 300, maxArrayLength: 30 });
export const clean = (d) => String(d).replace(/[#\n]/g, ' ');
export function diag(...lines) {
	for (const l of lines) for (const x of String(l).split('\n')) out('# ' + x);
}
export const counts = { pass: 0, fail: 0 };
export function pass(desc) { counts.pass++; out(`ok - ${clean(desc)}`); return true; }
export function fail(desc, ...d) { counts.fail++; out(`not ok - ${clean(desc)}`); diag(...d); return false; }

// a failed assertion: its lines are the diagnostics
export class Failed extends Error {
	constructor(...lines) { super(lines.join('\n')); this.lines = lines; }
}
export function eq(got, want, what = '') {
	if (!isDeepStrictEqual(got, want)) {
		throw new Failed(`${what}${what ? ': ' : ''}expected: ${show(want)}`, `${' '.repeat(what.length + (what ? 2 : 0))}     got: ${show(got)}`);
	}
}
export function assert(cond, ...d) { if (!cond) throw new Failed(...(d.length ? d : ['assertion failed'])); }
export function match(got, re, what = '') {
	if (typeof got !== 'string' || !re.test(got)) throw new Failed(`${what}${what ? ': ' : ''}expected to match ${re}`, `got: ${show(got)}`);
}
export const pick = (o, ...keys) => Object.fromEntries(keys.map((k) => [k, o?.[k]]));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// the error a promise rejects with; fails when it resolves or rejects with another class
export async function rejects(p, Cls, what = 'the call') {
	const r = await Promise.resolve(p).then((v) => ({ v }), (e) => ({ e }));
	if (!('e' in r)) throw new Failed(`${what} was expected to fail with ${Cls.name}`, `it returned: ${show(r.v)}`);
	if (!(r.e instanceof Cls)) throw new Failed(`${what} was expected to fail with ${Cls.name}`, `it failed with: ${r.e?.name}: ${r.e?.message}`, show(r.e));
	return r.e;
}
export async function waitFor(fn, ms, step = 50) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v || Date.now() > end) return v;
		await sleep(step);
	}
}

// One check: runs fn, passes when it returns without throwing, within ms. Never throws.
export async function check(desc, fn, ms = 20000) {
	let timer;
	try {
		await Promise.race([fn(), new Promise((_, rej) => {
			timer = setTimeout(() => rej(new Failed(`no answer within ${ms / 1000} s`)), ms);
		})]);
		return pass(desc);
	} catch (e) {
		return fail(desc, ...(e instanceof Failed ? e.lines : [e?.stack || show(e)]));
	} finally {
		clearTimeout(timer);
	}
}
// a check that needs something an earlier one made
export function need(v, what) { if (!v) throw new Failed(`skipped: ${what} was not made (an earlier check failed)`); return v; }

