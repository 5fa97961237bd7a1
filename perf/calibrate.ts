// How long does `tailgate calibrate` take, and how many simulated runs does it make? Ten load
// levels (1 to 96 closed-loop streams, four pairs of prompt/answer lengths) of a picked profile
// are run through the simulator and written as AIPerf would; the fit (values and intervals) and
// the whole check (fit + one fit per level left out) are timed side by side, as is a 3-level fit.
// The target (issue 39): fitting 10 levels takes under 10 s on the project's 2-core machine.
// Run: node --import tsx perf/calibrate.ts [--no-check]
import { calibrate, fitProfile, levelOf, type Level } from '../src/calibrate/index.js';
import { getProfile } from '../src/engine/index.js';
import { aiperfJson } from '../src/report/index.js';
import { runScenario, scenarioFromObject } from '../src/sim/index.js';

const picked = { ...getProfile('small'), name: 'picked', maxNumSeqs: 128, stepBaseMs: 12, prefillMsPerToken: 0.03, decodeMsPerToken: 0.2, frontendOverheadMs: 2 };
const shapes = [[128, 64], [512, 64], [256, 128], [1024, 32]] as const;

function level(concurrency: number, i: number): Level {
  const [isl, osl] = shapes[i % shapes.length]!;
  const requests = 4 * concurrency + 16;
  const s = { ...scenarioFromObject({ workers: 1, concurrency, requestCount: requests, warmupRequestCount: concurrency, inputTokens: { mean: isl }, outputTokens: { mean: osl }, datasetEntries: requests + concurrency }, 'perf'), profile: picked.name, engineProfile: picked };
  const r = runScenario(s, 'round-robin', 1, { keepChunks: false, recordMode: 'summary' });
  const doc = aiperfJson({ summary: r.summary, records: [], exportLevel: 'summary', startTime: new Date(0), endTime: new Date(r.simulatedMs), inputConfig: { endpoint: { model_names: ['m'], urls: ['sim'] }, loadgen: { concurrency, request_count: requests, warmup_request_count: concurrency } } });
  return levelOf(doc, `c=${concurrency}`);
}

const levels = [1, 2, 4, 8, 12, 16, 24, 32, 64, 96].map(level);
const base = getProfile('small');
const time = <T>(f: () => T): [T, number] => {
  const t0 = performance.now();
  const v = f();
  return [v, (performance.now() - t0) / 1000];
};
const [three, threeS] = time(() => fitProfile([levels[1]!, levels[5]!, levels[8]!], { base }));
const [ten, tenS] = time(() => fitProfile(levels, { base }));
const [check, checkS] = process.argv.includes("--no-check") ? [null, 0] : time(() => calibrate(levels, { base }));
const off = (p: typeof picked): string => (['stepBaseMs', 'prefillMsPerToken', 'decodeMsPerToken', 'frontendOverheadMs'] as const).map((k) => `${k} ${(100 * (p[k] / picked[k] - 1)).toFixed(1)}%`).join(', ');
console.log('| what | levels | wall s | simulated runs | recovered (off the picked value) |');
console.log('|---|---:|---:|---:|---|');
console.log(`| fit with intervals | 3 | ${threeS.toFixed(2)} | ${three.simulations} | ${off(three.profile as typeof picked)} |`);
console.log(`| fit with intervals | 10 | ${tenS.toFixed(2)} | ${ten.simulations} | ${off(ten.profile as typeof picked)} |`);
if (check) console.log(`| fit + leave-one-out (calibrate) | 10 | ${checkS.toFixed(2)} | ${check.fit.simulations} + 10 refits | leave-one-out error: ${Object.entries(check.leaveOneOutError ?? {}).map(([k, v]) => `${k} ${(100 * v).toFixed(1)}%`).join(', ')} |`);
console.log(`ratio 10-level fit / 10 s target: ${(tenS / 10).toFixed(2)}`);
