import { TailgateError, type Rng } from '../core/index.js';

/** One (ISL, OSL) pair of AIPerf's `--sequence-distribution`, with its weight in percent. */
export interface SequencePair {
  isl: number;
  /** Normal spread of the ISL (`ISL|STDDEV`); 0: exact. */
  islStddev: number;
  osl: number;
  oslStddev: number;
  /** Percent, 0-100; the pairs sum to 100. */
  prob: number;
}

function bad(text: string, why: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', `--sequence-distribution "${text}": ${why}`);
}

const NUM = String.raw`(?:\d+(?:\.\d+)?|\.\d+)`;
const SEMICOLON = new RegExp(String.raw`^(\d+)(?:\|(${NUM}))?\s*,\s*(\d+)(?:\|(${NUM}))?\s*:\s*(${NUM})$`);
const BRACKET = new RegExp(String.raw`\(\s*(\d+)(?:\|(${NUM}))?\s*,\s*(\d+)(?:\|(${NUM}))?\s*\)\s*:\s*(${NUM})`, 'g');

function pairOf(m: readonly (string | undefined)[]): SequencePair {
  return { isl: Number(m[1]), islStddev: Number(m[2] ?? 0), osl: Number(m[3]), oslStddev: Number(m[4] ?? 0), prob: Number(m[5]) };
}

function fromJson(text: string): SequencePair[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad(text, 'not valid JSON');
  }
  const pairs = (v as { pairs?: unknown } | null)?.pairs;
  if (!Array.isArray(pairs)) throw bad(text, 'a JSON form needs a "pairs" list');
  return pairs.map((p: Record<string, unknown>, i) => {
    for (const k of ['isl', 'osl', 'prob']) if (typeof p?.[k] !== 'number') throw bad(text, `pair ${i} needs a number "${k}"`);
    return { isl: Math.trunc(p['isl'] as number), islStddev: Number(p['isl_stddev'] ?? 0), osl: Math.trunc(p['osl'] as number), oslStddev: Number(p['osl_stddev'] ?? 0), prob: p['prob'] as number };
  });
}

/**
 * Parses AIPerf's `--sequence-distribution` in its three forms: `ISL[|SD],OSL[|SD]:PROB;...`,
 * `[(ISL[|SD],OSL[|SD]):PROB,...]` and `{"pairs": [{"isl", "isl_stddev", "osl", "osl_stddev", "prob"}]}`.
 * Probabilities are percentages and must sum to 100; lengths are >= 1, as AIPerf checks them.
 *
 * @example parseSequenceDistribution('64,32:50;256|16,64:50') // two pairs, the second's ISL spread 16
 * @throws TailgateError CONFIG_INVALID
 */
export function parseSequenceDistribution(input: string): SequencePair[] {
  const text = input.trim();
  if (text === '') throw bad(input, 'empty');
  let pairs: SequencePair[];
  if (text.startsWith('{')) pairs = fromJson(text);
  else if (text.startsWith('[') && text.endsWith(']')) pairs = [...text.slice(1, -1).matchAll(BRACKET)].map(pairOf);
  else {
    pairs = text.split(';').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
      const m = SEMICOLON.exec(s);
      if (!m) throw bad(input, `"${s}" is not ISL[|STDDEV],OSL[|STDDEV]:PROB`);
      return pairOf(m);
    });
  }
  if (pairs.length === 0) throw bad(input, 'no ISL,OSL:PROB pair found');
  for (const p of pairs) {
    if (!(p.isl >= 1 && p.osl >= 1)) throw bad(input, 'lengths must be >= 1');
    if (!(p.prob >= 0 && p.prob <= 100)) throw bad(input, `probability ${p.prob} is not a percentage 0-100`);
    if (!(p.islStddev >= 0 && p.oslStddev >= 0)) throw bad(input, 'standard deviations must be >= 0');
  }
  const total = pairs.reduce((s, p) => s + p.prob, 0);
  if (Math.abs(total - 100) > 1e-6) throw bad(input, `probabilities are percentages and must sum to 100 (got ${total})`);
  return pairs;
}

/**
 * Draws one (ISL, OSL) as AIPerf does: a pair by its weight (the first whose cumulative share
 * exceeds a uniform draw), then each length from a normal around it when it has a spread
 * (rounded, at least 1).
 */
export function samplePair(rng: Rng, pairs: readonly SequencePair[]): { isl: number; osl: number } {
  const u = rng.next() * 100;
  let acc = 0;
  let pick = pairs[pairs.length - 1]!;
  for (const p of pairs) {
    acc += p.prob;
    if (acc > u) {
      pick = p;
      break;
    }
  }
  const len = (mean: number, sd: number): number => (sd > 0 ? Math.max(1, Math.round(rng.normal(mean, sd))) : mean);
  return { isl: len(pick.isl, pick.islStddev), osl: len(pick.osl, pick.oslStddev) };
}
