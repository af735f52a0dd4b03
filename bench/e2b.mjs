// The E2B SDK against paddockd --e2b, side by side in one run with bare fork+exec and the
// kernel's floor from the same node process, interleaved round by round (bench/e2b.sh starts
// paddockd and sets the SDK's environment). Prints p50/p99 per operation and the ratio to bare.
import { spawnSync } from 'node:child_process'
import { Sandbox } from 'e2b'

const rounds = Number(process.argv[2] || 200)
const sbx = await Sandbox.create({ timeoutMs: 600_000 })
await sbx.files.write('/home/user/f', 'x'.repeat(4096))
// bubblewrap's cold start of /bin/true, the same way bench/pool.sh runs it (when installed)
const bwrap = ['--unshare-all', '--die-with-parent', '--new-session', '--ro-bind', '/usr', '/usr',
  '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64',
  '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '/bin/true']
const haveBwrap = spawnSync('bwrap', bwrap).status === 0
const ops = {
  bare: async () => { if (spawnSync('/bin/true').status !== 0) throw new Error('true failed') },
  // the kernel's floor for a sandbox: its namespaces and one process in them, nothing else
  'floor (unshare)': async () => { spawnSync('unshare', ['-Umnpiu', '-C', '--fork', '/bin/true']) },
  ...(haveBwrap ? { 'bwrap cold start': async () => { spawnSync('bwrap', bwrap) } } : {}),
  'commands.run true': async () => { await sbx.commands.run('true') },
  'files.read 4 KiB': async () => { await sbx.files.read('/home/user/f') },
  'files.write 4 KiB': async () => { await sbx.files.write('/home/user/g', 'y'.repeat(4096)) },
  'create + run + kill': async () => {
    const s = await Sandbox.create(); await s.commands.run('true'); await s.kill()
  },
}
const t = Object.fromEntries(Object.keys(ops).map(k => [k, []]))
for (const f of Object.values(ops)) await f() // warm the connections
for (let i = 0; i < rounds; i++)
  for (const [k, f] of Object.entries(ops)) {
    const t0 = process.hrtime.bigint(); await f(); t[k].push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
await sbx.kill()
const pct = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))] }
const bare = pct(t.bare, 0.5)
console.log('| operation | p50 ms | p99 ms | p50 / bare |\n|---|---|---|---|')
for (const [k, a] of Object.entries(t))
  console.log(`| ${k} | ${pct(a, 0.5).toFixed(2)} | ${pct(a, 0.99).toFixed(2)} | ${(pct(a, 0.5) / bare).toFixed(2)} |`)
