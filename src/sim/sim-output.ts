import { describeGate } from '../gate/index.js';
import { runCharts, workerName, type ReportDoc, type ReportSection } from '../report/index.js';
import type { PolicyName } from '../routing/index.js';
import type { Explanation, LossWaterfall } from './explain.js';
import type { MonteCarloResult, PolicyOutcome } from './monte-carlo.js';
import { simWorkerId } from './run-scenario.js';
import type { TenantResult } from './sim-records.js';
import type { Scenario } from './scenario.js';

/** One `tailgate simulate` run: every scenario's Monte Carlo and the totals. */
export interface SimulateRun {
  scenarios: { scenario: Scenario; result: MonteCarloResult }[];
  policies: readonly PolicyName[];
  trials: number;
  seed: number;
  wallMs: number;
}

/** 327x, 12x, 1.43x, 0.18x: whole above 10, two decimals below (a fleet-scale run is near 1x). */
function speedupText(x: number): string {
  return `${x >= 10 ? Math.round(x) : x.toFixed(2)}x`;
}

function totals(run: SimulateRun): { simulatedSeconds: number; wallSeconds: number; speedup: number } {
  const simulatedSeconds = run.scenarios.reduce((n, s) => n + s.result.simulatedMs, 0) / 1000;
  const wallSeconds = run.wallMs / 1000;
  return { simulatedSeconds, wallSeconds, speedup: wallSeconds > 0 ? simulatedSeconds / wallSeconds : 0 };
}

const r1 = (v: number): number => Math.round(v * 10) / 10;
const pct = (v: number): string => `${(v * 100).toFixed(1)}%`;

function policyJson(o: PolicyOutcome): Record<string, unknown> {
  return {
    trials: o.trials,
    failures: o.failures,
    failProbability: o.failProbability,
    failInterval95: o.failInterval95,
    ttftP99Ms: o.ttftP99Ms,
    ttftP50Ms: o.ttftP50Ms,
    requestLatencyP99Ms: o.requestLatencyP99Ms,
    outputTokensPerS: o.outputTokensPerS,
    shapes: o.shapes,
    redispatchedPerTrial: o.redispatchedPerTrial,
    migratedPerTrial: o.migratedPerTrial,
    prefixCacheHitRate: o.prefixCacheHitRate,
    simulatedSeconds: o.simulatedMs / 1000,
  };
}

/**
 * The `--json` document: totals, the first scenario's policies at the top level (the documented
 * shape), and every scenario under `scenarios`.
 */
export function simulateJson(run: SimulateRun): Record<string, unknown> {
  const t = totals(run);
  const per = (r: MonteCarloResult): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const p of run.policies) {
      const o = r.policies[p];
      const rep = r.representative[p];
      const explanation = rep?.explanation;
      if (!o) continue;
      out[p] = explanation ? { ...policyJson(o), explain: { seed: rep!.seed, ...explanation } } : policyJson(o);
      if (rep?.tenants) (out[p] as Record<string, unknown>)['tenants'] = { seed: rep.seed, shed: rep.shed ?? 0, tenants: rep.tenants };
    }
    return out;
  };
  return {
    simulatedSeconds: t.simulatedSeconds,
    wallSeconds: t.wallSeconds,
    speedup: t.speedup,
    seed: run.seed,
    trials: run.trials,
    scenario: run.scenarios[0]?.scenario.name ?? null,
    policies: run.scenarios[0] ? per(run.scenarios[0].result) : {},
    scenarios: run.scenarios.map(({ scenario, result }) => ({
      name: scenario.name,
      description: scenario.description,
      workers: scenario.workers,
      gates: scenario.gates.map(describeGate),
      simulatedSeconds: result.simulatedMs / 1000,
      policies: per(result),
    })),
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r, k) => {
    const line = r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
    return k === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : line;
  }).join('\n');
}

function policyRows(run: SimulateRun, r: MonteCarloResult): string[][] {
  const rows = [['policy', 'fail prob', '95% interval', 'TTFT p99 p10/p50/p90 (ms)', 'TTFT p50 p50 (ms)', 'tok/s p10/p50/p90', 'req lat p99 p50 (ms)', 'prefix hits', 'shapes']];
  for (const p of run.policies) {
    const o = r.policies[p];
    if (!o) continue;
    const shapes = Object.entries(o.shapes).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ');
    rows.push([
      p,
      pct(o.failProbability),
      `${pct(o.failInterval95.low)}-${pct(o.failInterval95.high)}`,
      `${Math.round(o.ttftP99Ms.p10)}/${Math.round(o.ttftP99Ms.p50)}/${Math.round(o.ttftP99Ms.p90)}`,
      `${Math.round(o.ttftP50Ms.p50)}`,
      `${Math.round(o.outputTokensPerS.p10)}/${Math.round(o.outputTokensPerS.p50)}/${Math.round(o.outputTokensPerS.p90)}`,
      `${Math.round(o.requestLatencyP99Ms.p50)}`,
      pct(o.prefixCacheHitRate),
      shapes,
    ]);
  }
  return rows;
}

function matrixRows(run: SimulateRun): string[][] {
  const rows = [['policy \\ scenario', ...run.scenarios.map((s) => s.scenario.name)]];
  for (const p of run.policies) rows.push([p, ...run.scenarios.map((s) => { const o = s.result.policies[p]; return o ? `${pct(o.failProbability)} fail` : '-'; })]);
  return rows;
}

/** The waterfall's columns: key, heading (k tok/s). */
const LOSS_COLUMNS: readonly [keyof LossWaterfall, string][] = [
  ['healthy', 'healthy'], ['faults', '-faults'], ['bound', '=bound'], ['stuck', '-stuck'], ['routerQueue', '-router queue'],
  ['probation', '-probation'], ['idleSlots', '-idle slots'], ['redone', '-redone'], ['other', '-other'], ['delivered', '=delivered'],
];

/** Rows of the loss waterfall in k tok/s: one per second of the profiling window, then the window. */
function explainRows(e: Explanation): string[][] {
  const k = (v: number): string => (v / 1000).toFixed(1);
  const row = (x: LossWaterfall, label: string): string[] => [label, ...LOSS_COLUMNS.map(([key]) => k(x[key]))];
  return [
    ['second (s)', ...LOSS_COLUMNS.map(([, h]) => h)],
    ...e.perSecond.map((x) => row(x, `${(x.fromMs / 1000).toFixed(1)}-${(x.toMs / 1000).toFixed(1)}`)),
    row(e.total, 'window'),
  ];
}

/** One line under the waterfall: the bound as a share of healthy, and what routing kept of it. */
function explainVerdict(e: Explanation): string {
  const t = e.total;
  const share = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(3) : 'n/a');
  return `window ${(t.fromMs / 1000).toFixed(1)}-${(t.toMs / 1000).toFixed(1)} s: the faults leave ${share(t.bound, t.healthy)} of healthy capacity at best (bound); delivered ${share(t.delivered, t.healthy)} of healthy, ${share(t.delivered, t.bound)} of the bound`;
}

/** The console text: one table per scenario, the policy x scenario table, and the time figures. */
export function formatSimulate(run: SimulateRun): string {
  const out: string[] = [];
  for (const { scenario, result } of run.scenarios) {
    out.push(`scenario ${scenario.name}: ${scenario.description || `${scenario.workers} workers`}`);
    out.push(`gates: ${scenario.gates.map(describeGate).join('; ') || '(none)'}; ${run.trials} trials per policy, seeds ${run.seed}..${run.seed + run.trials - 1}`);
    out.push(table(policyRows(run, result)), '');
    for (const p of run.policies) {
      const rep = result.representative[p];
      if (rep?.tenants) out.push(`tenants: ${scenario.name} / ${p}, trial seed ${rep.seed}`, table(tenantRows(rep.tenants)), '');
      if (!rep?.explanation) continue;
      out.push(`where the tokens went: ${scenario.name} / ${p}, trial seed ${rep.seed} (k tok/s)`, table(explainRows(rep.explanation)), explainVerdict(rep.explanation), '');
    }
  }
  if (run.scenarios.length > 1) out.push(table(matrixRows(run)), '');
  const t = totals(run);
  out.push(`simulated ${r1(t.simulatedSeconds)} s of fleet time in ${t.wallSeconds.toFixed(2)} s wall: ${speedupText(t.speedup)} real time`);
  return `${out.join('\n')}\n`;
}

/** The HTML report: per scenario the policy table, each policy's per-worker in-flight and TTFT over time (first trial). */
export function simulateReportDoc(run: SimulateRun): ReportDoc {
  const t = totals(run);
  const sections: ReportSection[] = [];
  const columns = ['policy', 'gate fail probability (Wilson 95%)', 'TTFT p99 ms across trials (p50 / p90)', 'output tok/s across trials (p10 / p50 / p90)', 'shapes (trials)'];
  const n = (v: number): string => Math.round(v).toLocaleString('en-US');
  for (const { scenario, result } of run.scenarios) {
    const rows: (string | number)[][] = [];
    for (const p of run.policies) {
      const o = result.policies[p];
      if (!o) continue;
      rows.push([p, `${pct(o.failProbability)} (${pct(o.failInterval95.low)} to ${pct(o.failInterval95.high)})`, `${n(o.ttftP99Ms.p50)} / ${n(o.ttftP99Ms.p90)}`,
        `${n(o.outputTokensPerS.p10)} / ${n(o.outputTokensPerS.p50)} / ${n(o.outputTokensPerS.p90)}`,
        Object.entries(o.shapes).map(([k, v]) => `${k} ${v}`).join(', ')]);
    }
    sections.push({
      title: `Scenario ${scenario.name}`,
      text: `${scenario.description}\n\nGates: ${scenario.gates.map(describeGate).join('; ') || 'none'}. ${run.trials} trials per policy (seeds ${run.seed}..${run.seed + run.trials - 1}, the same seeds for every policy).`,
      table: { columns, rows },
    });
    for (const p of run.policies) {
      const rep = result.representative[p];
      if (!rep) continue;
      const order = Object.keys(rep.perWorkerInflight).length > 0 ? Array.from({ length: scenario.workers }, (_, i) => simWorkerId(i)) : [];
      const charts = runCharts({
        idPrefix: `${scenario.name}-${p}`, titlePrefix: `${p}: `, records: rep.records, workerSeries: rep.perWorkerInflight, workerOrder: order,
        gates: rep.gates, originMs: 0, bucketMs: 500, ttftLog: true,
        windows: rep.faults.map((f) => ({ fromMs: f.atMs, toMs: Math.min(f.atMs + f.forMs, rep.simulatedMs), label: `${workerName(f.worker, simWorkerId(f.worker))} ${f.kind}` })).filter((w) => w.fromMs <= rep.simulatedMs),
      });
      sections.push({ title: `${scenario.name} / ${p}: ${rep.shape.shape}`, text: rep.shape.explanation, charts });
      if (rep.tenants) {
        const rows = tenantRows(rep.tenants);
        sections.push({ title: `${scenario.name} / ${p}: tenants (trial seed ${rep.seed})`, text: `Profiling requests per tenant; errors count the ${rep.shed ?? 0} shed with 429.`, table: { columns: rows[0]!, rows: rows.slice(1) } });
      }
      if (rep.explanation) {
        const rows = explainRows(rep.explanation);
        sections.push({
          title: `${scenario.name} / ${p}: where the tokens went (k tok/s, trial seed ${rep.seed})`,
          text: `${explainVerdict(rep.explanation)}. Each row: healthy capacity, minus what the faults take (leaving the bound no routing can beat), minus streams stuck on stalled workers, waiting in the router, room left on a worker on probation after a stall and on the others, prefill done again, and what the step model does not explain, equals what the engines delivered.`,
          table: { columns: rows[0]!, rows: rows.slice(1) },
        });
      }
    }
  }
  if (run.scenarios.length > 1) {
    const m = matrixRows(run);
    sections.push({ title: 'Gate fail probability, policy x scenario', table: { columns: m[0]!, rows: m.slice(1) } });
  }
  return {
    title: 'tailgate simulate',
    subtitle: `${run.scenarios.map((s) => s.scenario.name).join(', ')}: ${run.policies.join(', ')}`,
    meta: {
      seed: String(run.seed),
      trials: String(run.trials),
      'simulated seconds': r1(t.simulatedSeconds).toString(),
      'wall seconds': (Math.round(t.wallSeconds * 100) / 100).toString(),
      'simulated / wall': speedupText(t.speedup),
    },
    sections,
  };
}

/** Per tenant of one trial: requests, errors (shed included), TTFT p50 and p99. */
function tenantRows(tenants: readonly TenantResult[]): string[][] {
  return [['tenant', 'priority', 'requests', 'errors', 'TTFT p50 ms', 'TTFT p99 ms'],
    ...tenants.map((t) => [t.name, t.priority, String(t.requests), String(t.errors), Number.isNaN(t.ttftP50Ms) ? '-' : String(Math.round(t.ttftP50Ms)), Number.isNaN(t.ttftP99Ms) ? '-' : String(Math.round(t.ttftP99Ms))])];
}
