import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aggregateTrials, classifyTrial, judgeGates, type Gate, type PassRule } from '../gate/index.js';
import { junitXml } from '../report/index.js';
import { summarize, syntheticRecord } from '../stats/index.js';
import { junitSuites } from './junit-suites.js';
import { resolveValidateOptions } from './options.js';
import type { Readiness } from './readiness.js';
import { consoleSummary, summaryMarkdown } from './summary-text.js';
import type { TrialOutcome } from './trial.js';

const XSD = fileURLToPath(new URL('../../test/fixtures/junit/junit.xsd', import.meta.url));
const hasXmllint = spawnSync('xmllint', ['--version']).status === 0;
const WORKERS = ['127.0.0.1:9000', '127.0.0.1:9001'];

const readiness: Readiness = {
  mode: 'router', expected: 2, ready: 2, ok: true, waitedMs: 120, workers: [], notReady: [], routerMetricsUrl: null,
  probe: { ok: true, latencyMs: 40, status: 200, content: 'hi', error: null }, message: '2 of 2 workers ready after 120ms',
};

/** One trial of 2 workers x 8 streams x 5 rounds, every request with the given TTFT. */
function trial(index: number, ttftMs: number, gates: Gate[]): TrialOutcome {
  const records = WORKERS.flatMap((worker) => Array.from({ length: 8 * 5 }, (_, k) =>
    syntheticRecord({ id: `${worker}-${k}`, worker, startMs: Math.floor(k / 8) * (ttftMs + 200) + (k % 8), ttftMs, itlMs: 10, tokens: 20 })));
  const summary = summarize(records);
  const judged = judgeGates(summary, gates);
  const shape = classifyTrial({ summary, gates: judged, expectedWorkers: 2 });
  return {
    index, label: `trial-${index}`, concurrency: 16, concurrencyPerGpu: 8, pass: judged.every((g) => g.pass), gates: judged, shape, locus: null,
    gpu: null, summary, bench: null, records, series: null, workerSeries: {}, host: [], timedOut: false, interrupted: false, error: null, wallMs: 2000,
    warnings: [], warningEvidence: { routerCounters: false, workerMetrics: false, gpuTelemetry: false, requests: true },
  };
}

function run(rule: PassRule, ttfts: number[]): { xml: string; summary: string; console: string; verdict: string } {
  const o = resolveValidateOptions({ url: 'http://127.0.0.1:8000', model: 'm', gpus: 2, concurrencyPerGpu: 8, minThroughput: 50, maxTtftP99: 1000, trials: ttfts.length, passRule: rule });
  const trials = ttfts.map((t, i) => trial(i + 1, t, o.gates));
  const aggregate = aggregateTrials(trials, rule, o.gates);
  const s = { o, verdict: aggregate.verdict, reason: 'because', readiness, trials, aggregate, sweep: null, outDir: 'out' };
  const xml = junitXml(junitSuites({ ...s, startedAt: new Date('2026-01-02T03:04:05.678Z') }), { hostname: 'ci-runner-7' });
  return { xml, summary: summaryMarkdown(s), console: consoleSummary(s), verdict: aggregate.verdict };
}

/** Validates with xmllint against the JUnit schema in test/fixtures (skips where xmllint is absent). */
async function assertSchemaValid(t: { skip(m: string): void; after(fn: () => Promise<void>): void }, xml: string): Promise<void> {
  if (!hasXmllint) {
    t.skip('xmllint not installed (apt-get install libxml2-utils)');
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-junit-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'junit.xml');
  await writeFile(file, xml);
  const r = spawnSync('xmllint', ['--noout', '--schema', XSD, file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stderr}\n${xml}`);
}

const attr = (xml: string, suite: string, name: string): string | undefined => new RegExp(`<testsuite name="${suite}"[^>]* ${name}="([^"]*)"`).exec(xml)?.[1];

test('junit: a majority-rule PASS with one failed trial has 0 failures and a passing verdict case', async (t) => {
  const r = run('majority', [200, 3000, 220]);
  assert.equal(r.verdict, 'pass');
  await assertSchemaValid(t, r.xml);
  assert.match(r.xml, /<testsuites name="tailgate" tests="5" failures="0"/);
  assert.equal(attr(r.xml, 'gates', 'failures'), '0');
  assert.equal(attr(r.xml, 'gates', 'hostname'), 'ci-runner-7');
  assert.equal(attr(r.xml, 'readiness', 'timestamp'), '2026-01-02T03:04:05');
  assert.equal(attr(r.xml, 'gates', 'time'), '6.000');
  assert.match(r.xml, /<testcase name="verdict \(pass rule majority\)" classname="tailgate.validate" time="6.000">\n {6}<system-out>/);
  assert.match(r.xml, /<testcase name="time_to_first_token.p99 &lt;= 1000 \(x1.1\)" classname="tailgate.validate.gates"/);
  // The failed trial is still on record, as system-out and properties, not as a failure.
  assert.match(r.xml, /trial-2: fail TTFT p99 3,000 ms past the 1,100 ms ceiling \(1,000 x1.1\)/);
  assert.match(r.xml, /<property name="trialsPassed" value="2"\/>/);
  assert.doesNotMatch(r.xml, /<failure/);
  // The same rule in summary.md and on the console.
  assert.match(r.summary, /## Gates under rule majority/);
  assert.match(r.summary, /- PASS time_to_first_token.p99 <= 1000 \(x1.1\) under rule majority: 2 of 3 trials/);
  assert.match(r.console, /gate PASS time_to_first_token.p99 <= 1000 \(x1.1\) under rule majority: 2 of 3 trials/);
});

test('junit: a majority-rule FLAKY with one passing trial fails the gate and the verdict, naming only the failed gate', async (t) => {
  const r = run('majority', [200, 3000, 2800]);
  assert.equal(r.verdict, 'flaky');
  await assertSchemaValid(t, r.xml);
  assert.match(r.xml, /<testsuites name="tailgate" tests="5" failures="2"/);
  const failures = [...r.xml.matchAll(/<failure message="([^"]*)" type="([^"]*)">([^<]*)<\/failure>/g)];
  assert.equal(failures.length, 2);
  const [gate, verdict] = failures;
  assert.match(gate![1]!, /^time_to_first_token.p99 &lt;= 1000 \(x1.1\) fails under rule majority \(more than half the trials\): 1 of 3 trials within the limit &lt;= 1100$/);
  assert.match(gate![3]!, /trial-2: TTFT p99 3,000 ms past the 1,100 ms ceiling \(1,000 x1.1\); shape broad-degradation/);
  assert.match(verdict![1]!, /^FLAKY under rule majority \(more than half the trials\): 1 of 3 trials passed$/);
  assert.equal(verdict![2], 'Flaky');
  assert.match(verdict![3]!, /trial-3: TTFT p99 2,800 ms past the 1,100 ms ceiling/);
  assert.match(verdict![3]!, /time_to_first_token.p99: the 95% interval \[-?[\d,.]+, [\d,.]+\] holds the limit &lt;= 1,100; the figure sits at the limit/);
  for (const f of failures) assert.doesNotMatch(f[3]!, /throughput/, 'the throughput floor held: no failure names it');
  assert.match(r.console, /gate FAIL time_to_first_token.p99 <= 1000 \(x1.1\) under rule majority: 1 of 3 trials/);
});

test('junit: under the median rule a gate is judged by its median figure', async (t) => {
  const r = run('median', [3000, 2800, 200]);
  assert.equal(r.verdict, 'flaky');
  await assertSchemaValid(t, r.xml);
  assert.match(r.xml, /fails under rule median \(the median across trials\): median TTFT p99 2,800 ms past the 1,100 ms ceiling/);
  const ok = run('median', [200, 3000, 220]);
  assert.equal(ok.verdict, 'pass');
  assert.doesNotMatch(ok.xml, /<failure/);
});
