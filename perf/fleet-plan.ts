// Does a live fleet run the profile it was given? A one-worker fleet on a picked profile runs in this
// process with a clock that records every timer (when due, when fired); `tailgate bench` loads it
// from a subprocess; then the requests' live arrivals are replayed on a virtual clock with the same
// profile (the engine's plan) and each request's first token and mean gap are printed live beside
// the plan, with the timers' lateness by kind.
// Run: node --import tsx perf/fleet-plan.ts [concurrency=1] [isl=128] [osl=24] [requests=12]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RealClock, VirtualClock, type Clock, type Timer } from '../src/core/index.js';
import { Engine, getProfile, type EngineProfile } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

const PICKED: EngineProfile = { ...getProfile('small'), name: 'picked', maxNumSeqs: 12, kvBlocks: 4096, maxNumBatchedTokens: 4096, stepBaseMs: 20, prefillMsPerToken: 0.08, decodeMsPerToken: 3, frontendOverheadMs: 5 };
const [conc = '1', isl = '128', osl = '24', reqs = '12'] = process.argv.slice(2);

const real = new RealClock();
const timers: { name: string; due: number; firedMs: number }[] = [];
const clock: Clock = {
  now: () => real.now(),
  setTimer(atMs: number, fn: () => void): Timer {
    const rec = { name: fn.name, due: Math.max(atMs, real.now()), firedMs: Number.NaN };
    timers.push(rec);
    return real.setTimer(atMs, () => {
      rec.firedMs = real.now();
      fn();
    });
  },
};
const fleet = await startFleet({ workers: 1, port: 0, profile: PICKED, prefixCaching: false, clock });
const engine = fleet.workers[0]!.engine;
const live: { submitMs: number; prompt: number; max: number; tokens: number[] }[] = [];
const submit = engine.submit.bind(engine);
engine.submit = (req) => {
  const rec = { submitMs: clock.now(), prompt: req.promptTokens, max: req.maxTokens, tokens: [] as number[] };
  live.push(rec);
  return submit({ ...req, arrivalMs: rec.submitMs, onToken: (c, now) => (rec.tokens.push(now), req.onToken(c, now)) });
};
const benchCode = await new Promise<number | null>((done) => {
  const args = ['--import', 'tsx', CLI, 'bench', '--url', fleet.workers[0]!.url, '--model', 'Qwen/Qwen3-8B', '--streaming', '--num-dataset-entries', '200', '--concurrency', conc, '--request-count', reqs, '--warmup-request-count', '0', '--isl', isl, '--osl', osl, '--artifact-dir', `/tmp/fleet-plan-c${conc}`];
  // From the repository, wherever the caller runs (`--import tsx` resolves from the working directory); bench's own error line shows.
  spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], cwd: ROOT }).on('exit', (code) => done(code));
});
await fleet.close();
if (benchCode !== 0 || live.length === 0) {
  console.error(`perf/fleet-plan: bench exited ${benchCode} after ${live.length} requests; nothing to compare`);
  process.exit(1);
}

const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
const byName = new Map<string, number[]>();
for (const t of timers) if (Number.isFinite(t.firedMs)) (byName.get(t.name) ?? byName.set(t.name, []).get(t.name)!).push(t.firedMs - t.due);
for (const [name, late] of byName) {
  const s = sorted(late);
  console.log(`timer ${name || '(anonymous)'}: ${s.length} fired, late ms min ${s[0]!.toFixed(2)} p50 ${s[s.length >> 1]!.toFixed(2)} max ${s.at(-1)!.toFixed(2)}`);
}
// The plan: the same arrivals on a virtual clock (the frontend time counted from the submit, as above).
const vc = new VirtualClock();
const planned = new Engine({ clock: vc, profile: PICKED, prefixCaching: false });
const plan: number[][] = live.map(() => []);
const t0 = live[0]!.submitMs;
live.forEach((r, i) => vc.setTimer(r.submitMs - t0, () => void planned.submit({ promptTokens: r.prompt, maxTokens: r.max, onToken: (_c, now) => plan[i]!.push(now + t0), onFinish() {} })));
vc.run();
const gap = (t: number[]) => (t.at(-1)! - t[0]!) / (t.length - 1);
const firstDiff = live.map((r, i) => r.tokens[0]! - plan[i]![0]!);
const gapDiff = live.map((r, i) => gap(r.tokens) - gap(plan[i]!));
live.forEach((r, i) => console.log(`request ${i} at ${(r.submitMs - t0).toFixed(1)} ms: first token live ${(r.tokens[0]! - r.submitMs).toFixed(2)} plan ${(plan[i]![0]! - r.submitMs).toFixed(2)}; mean gap live ${gap(r.tokens).toFixed(2)} plan ${gap(plan[i]!).toFixed(2)}`));
console.log(`first token live - plan: p50 ${sorted(firstDiff)[firstDiff.length >> 1]!.toFixed(2)} ms; mean gap live - plan: p50 ${sorted(gapDiff)[gapDiff.length >> 1]!.toFixed(3)} ms; lost (late counter) ${engine.stats().lateMsTotal.toFixed(2)} ms over ${engine.stats().stepsTotal} steps`);
