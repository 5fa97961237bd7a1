import type { FigureComparison } from './judge.js';
import type { RunSide } from './load-run.js';

/** What the comparison found, in one paragraph, and what it rests on. */
export interface CompareFinding {
  /** `differ`: something beyond run-to-run noise; `noise`: nothing is. */
  verdict: 'differ' | 'noise';
  /** Where the top difference lives: `worker 2`, `fleet`, `router`, `host`, `client`, or null. */
  where: string | null;
  /** The worker the top difference names (index), or null. */
  worker: number | null;
  paragraph: string;
}

/** A figure's value with its unit. */
export const fmt = (v: number, unit: string): string => {
  if (unit === 'share') return `${(v * 100).toFixed(1)}%`;
  if (unit === 'bits') return `0x${Math.round(v).toString(16)}`;
  if (unit === 'xid') return String(Math.round(v));
  const n = Math.abs(v) >= 100 || Number.isInteger(v) ? Math.round(v).toLocaleString('en-US') : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  return unit === '%' ? `${n}%` : `${n} ${unit}`;
};
const times = (c: FigureComparison): string => (c.ratio === null ? '' : c.ratio >= 1 ? `${c.ratio.toFixed(c.ratio >= 10 ? 0 : 1)}x` : `${c.ratio.toFixed(2)}x`);
/** `20.1 ms -> 48.3 ms`. */
export const fromTo = (c: FigureComparison): string => `${fmt(c.a, c.def.unit)} -> ${fmt(c.b, c.def.unit)}`;

function shapesText(side: RunSide, names: (w: number) => string): string {
  const passed = side.trials.filter((t) => t.verdict === 'pass').length;
  const judged = side.trials.filter((t) => t.verdict !== null).length;
  const counts = new Map<string, number>();
  for (const t of side.trials) {
    if (t.verdict !== 'fail' || t.shape === null) continue;
    const where = [t.shapeWorker !== null ? names(t.shapeWorker) : null, t.locus !== null && t.locus !== 'unknown' ? `locus ${t.locus}` : null].filter((x) => x !== null);
    const k = `${t.shape}${where.length > 0 ? ` (${where.join(', ')})` : ''}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const shapes = [...counts].map(([k, n]) => `${k} in ${n}`).join(', ');
  return judged === 0 ? `${side.name} was not judged (bench output)` : `${side.name} passes ${passed} of ${judged} trials${shapes ? ` (${shapes})` : ''}`;
}

/** B's failures as the seed report's authors read theirs: several distinct shapes, and clean trials between failing ones. */
function mixedText(side: RunSide, names: (w: number) => string): string {
  const failing = side.trials.filter((t) => t.verdict === 'fail');
  const shapes = [...new Set(failing.map((t) => t.shape).filter((s): s is string => s !== null))];
  const clean = side.trials.filter((t) => t.verdict === 'pass').length;
  const out: string[] = [];
  if (shapes.length >= 2) {
    out.push(`${side.name} fails in ${shapes.length} distinct shapes, not one: ${shapes.map((s) => {
      const w = failing.find((t) => t.shape === s && t.shapeWorker !== null)?.shapeWorker;
      return w === undefined || w === null ? s : `${s} (${names(w)})`;
    }).join(' and ')}.`);
  }
  if (clean > 0 && failing.length > 0) out.push(`${side.name}'s trials are mixed (${clean} clean, ${failing.length} failing with the same load): the trouble comes and goes.`);
  return out.length > 0 ? ` ${out.join(' ')}` : '';
}

/** The worker's figures that moved, as words: errors, steps, TTFT, in-flight, then the GPU beside them and what that says. */
function workerText(w: number, rows: FigureComparison[], name: string): string {
  const of = (m: string): FigureComparison | undefined => rows.find((r) => r.def.worker === w && r.def.metric === m);
  const moved = (m: string): FigureComparison | undefined => {
    const r = of(m);
    return r?.beyondNoise ? r : undefined;
  };
  const parts: string[] = [];
  const err = moved('error share');
  if (err) parts.push(`fails ${fmt(err.b, 'share')} of its requests (A ${fmt(err.a, 'share')})`);
  const peak = moved('in-flight peak');
  // A backup (twice the in-flight) is what a person sees first; the slower steps say why.
  const backup = peak !== undefined && peak.b >= 2 * peak.a;
  if (peak && backup) parts.push(`backs up to ${fmt(peak.b, 'requests')} in flight at peak (A ${fmt(peak.a, 'requests')})`);
  const step = moved('step time (ITL)');
  if (step) parts.push(`runs ${times(step)} ${step.b > step.a ? 'slower' : 'faster'} steps (ITL ${fromTo(step)})`);
  const ttft = moved('TTFT p99');
  if (ttft && parts.length < 3) parts.push(`has TTFT p99 ${times(ttft)} (${fromTo(ttft)})`);
  if (peak && !backup && parts.length < 2) parts.push(`holds ${fmt(peak.b, 'requests')} in flight at peak (A ${fmt(peak.a, 'requests')})`);
  for (const c of ['failed', 'retried', 'redispatched', 'ejected'] as const) {
    const r = moved(`router ${c}`);
    if (r && parts.length < 3) parts.push(`has ${fmt(r.b, 'requests')} ${c} by the router (A ${fmt(r.a, 'requests')})`);
  }
  if (parts.length === 0) {
    const top = rows.filter((r) => r.def.worker === w && r.beyondNoise).sort((x, y) => y.score - x.score)[0];
    if (top) parts.push(`has ${top.def.metric} ${fromTo(top)}`);
  }
  const clock = of('GPU SM clock');
  const util = of('GPU utilisation');
  const reasons = of('GPU clock-event reasons');
  const xid = of('GPU XID');
  let gpu = '';
  let locus = '';
  if (xid?.beyondNoise) {
    gpu = ` with XID ${fmt(xid.b, 'xid')} on its GPU`;
    locus = 'GPU side (an XID error)';
  } else if (clock?.beyondNoise && clock.b < clock.a) {
    gpu = ` at lowered GPU clocks (${fromTo(clock)}${reasons?.beyondNoise ? `, clock-event reasons ${fmt(reasons.b, 'bits')}` : ''})`;
    locus = 'GPU side: throttled';
  } else if ((clock || util) && (step || ttft || peak)) {
    const idles = util?.beyondNoise === true && util.b < util.a;
    gpu = ` at ${clock && !clock.beyondNoise ? 'full' : 'unchanged'} GPU clocks while its GPU ${idles ? `idles (utilisation ${fromTo(util)})` : 'stays busy'}`;
    if (step && step.b > step.a) locus = idles ? 'host side' : 'GPU side: the work itself is slower';
  } else if (step) {
    locus = 'no GPU telemetry to tell host from GPU';
  }
  if ((err || moved('router failed')) && !step) locus = `the worker answers errors${err ? '' : ' (the router retried them elsewhere, so the client saw none)'}`;
  return `B's ${name} ${parts.join(', ')}${gpu}${locus ? `: ${locus}` : ''}.`;
}

function fleetText(top: FigureComparison, rows: FigureComparison[]): string {
  const standsOut = rows.some((r) => r.def.scope === 'worker' && r.def.metric === top.def.metric && r.score > 0);
  if (top.def.metric === 'step time (ITL)') return `Every worker's steps are ${times(top)} ${top.b > top.a ? 'slower' : 'faster'} in B (ITL ${fromTo(top)})${standsOut ? '' : ' and no worker stands out'}: broad degradation, not one worker.`;
  if (top.def.metric === 'error share') return `B fails ${fmt(top.b, 'share')} of its requests (A ${fmt(top.a, 'share')}), spread over the workers.`;
  return `B's ${top.def.metric} is ${fromTo(top)} (${times(top)}) across the fleet.`;
}

function routerText(rows: FigureComparison[]): string {
  const get = (m: string): FigureComparison | undefined => rows.find((r) => r.def.scope === 'router' && r.def.metric === m);
  const q = get('router queue mean');
  const qp = get('router queue peak');
  const peak = get('worker in-flight peak (highest)');
  const step = rows.find((r) => r.def.scope === 'fleet' && r.def.metric === 'step time (ITL)');
  const capped = peak?.beyondNoise === true && peak.b < peak.a;
  const queued = q?.beyondNoise === true && q.b > q.a;
  const head = queued ? `B's router holds requests in its queue (mean ${fromTo(q)}${qp?.beyondNoise ? `, peak ${fromTo(qp)}` : ''})` : `B's router queue ${q ? `is ${fromTo(q)}` : 'differs'}`;
  const why = capped ? ` while no worker runs more than ${fmt(peak.b, 'requests')} at once (A ${fmt(peak.a, 'requests')}): a lower per-worker cap at the router` : '';
  const engines = step && !step.beyondNoise ? ', not the engines (step time unchanged)' : '';
  return `${head}${why}${engines}.`;
}

/** The top difference of `rows` in one or two sentences, and where it lives; null when nothing beyond noise explains anything. */
function leadOf(rows: FigureComparison[], name: (w: number) => string): { lead: string; where: string; worker: number | null } | null {
  const top = rows.filter((r) => !r.def.gated && r.def.outcome !== true && r.score > 0).sort((x, y) => y.score - x.score)[0];
  if (!top) return null;
  if (top.def.scope === 'worker') return { lead: workerText(top.def.worker!, rows, name(top.def.worker!)), where: `worker ${top.def.worker!}`, worker: top.def.worker };
  if (top.def.scope === 'router') return { lead: routerText(rows), where: 'router', worker: null };
  if (top.def.scope === 'fleet') return { lead: fleetText(top, rows), where: 'fleet', worker: null };
  return { lead: `B's ${top.def.scope} differs: ${top.def.metric} ${fromTo(top)}.`, where: top.def.scope, worker: null };
}

/** One failing trial of B compared alone against all of A. */
export interface TrialContrast {
  label: string;
  shape: string | null;
  rows: FigureComparison[];
}

/**
 * The one paragraph a person reads first: what differs most and where (a worker, the fleet, the
 * router, the host), how each side fared, the gated figures' gap, and what is ruled out. When B
 * fails some trials and not others, each failing trial against A says what went wrong in it.
 *
 * @example describeComparison(rows, a, b).paragraph; // "B's worker 2 (127.0.0.1:8102) runs 2.5x slower steps ..."
 */
export function describeComparison(rows: FigureComparison[], a: RunSide, b: RunSide, contrasts: readonly TrialContrast[] = []): CompareFinding {
  const ids = b.trials[0]?.workers ?? [];
  const name = (w: number): string => `worker ${w}${ids[w] ? ` (${ids[w]})` : ''}`;
  const gap = rows.filter((r) => r.def.gated && r.beyondNoise);
  const outcomes = rows.filter((r) => r.def.outcome === true && r.beyondNoise);
  const verdicts = `${shapesText(a, name)}; ${shapesText(b, name)}.${mixedText(b, name)}`;
  const side = leadOf(rows, name);
  const perTrial = contrasts.map((c) => ({ c, l: leadOf(c.rows, name) })).filter((x) => x.l !== null && x.l.where !== side?.where);
  if (gap.length === 0 && side === null && perTrial.length === 0) {
    const largest = rows.filter((r) => r.def.kind === 'ratio' && r.ratio !== null).sort((x, y) => Math.abs(Math.log(y.ratio!)) - Math.abs(Math.log(x.ratio!)))[0];
    const lone = outcomes.length > 0 ? ` Only ${outcomes.map((o) => `${o.def.metric} (${fromTo(o)})`).join(', ')} moved, ungated and with nothing behind it.` : '';
    return {
      verdict: 'noise',
      where: null,
      worker: null,
      paragraph: `No difference beyond run-to-run noise: no gated figure and no diagnostic figure of the ${rows.length} compared moved past its noise bound${largest ? ` (the largest change, ${largest.def.key}, is ${times(largest)}: ${fromTo(largest)})` : ''}.${lone} ${verdicts}`,
    };
  }
  const parts: string[] = [];
  if (side !== null) parts.push(side.lead);
  else if (perTrial.length === 0) parts.push('The gated figures differ, but no diagnostic figure moved beyond noise to explain it.');
  const failsA = a.trials.filter((t) => t.verdict === 'fail').length;
  const failsB = b.trials.filter((t) => t.verdict === 'fail').length;
  if (contrasts.length > 0) {
    parts.push(`B fails ${failsB} of ${b.trials.length} trials where A fails ${failsA === 0 ? 'none' : `${failsA} of ${a.trials.length}`}.${perTrial.map(({ c, l }) => ` In B's ${c.label}${c.shape ? ` (${c.shape})` : ''}: ${l!.lead}`).join('')}`);
  }
  const where = side?.where ?? perTrial[0]?.l?.where ?? null;
  const worker = side !== null ? side.worker : (perTrial[0]?.l?.worker ?? null);
  const gapText = gap.length > 0 ? ` Gated: ${gap.map((g) => `${g.def.metric} ${fromTo(g)} (${times(g)})`).join(', ')}.` : ' The gated figures, over all trials, are within noise.';
  const psi = rows.find((r) => r.def.metric === 'CPU pressure (PSI some avg10) max');
  const host = psi && !psi.beyondNoise && (gap.length > 0 || failsB > failsA) ? ` Host CPU pressure is the same on both sides (PSI some avg10 max ${fromTo(psi)}): not CPU contention.` : '';
  return { verdict: 'differ', where, worker, paragraph: `${parts.join(' ')} ${verdicts}${gapText}${host}` };
}
