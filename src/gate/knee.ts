/** One point of a concurrency sweep. */
export interface SweepPoint {
  concurrency: number;
  /** Output tokens/sec. */
  throughput: number;
  ttftP99Ms: number;
}

/** Options of {@link findKnee}. */
export interface KneeOptions {
  /** The TTFT p99 ceiling; the recommendation keeps `headroom` under it. */
  ttftCeilingMs?: number;
  /** A doubling that adds less than this fraction of throughput is saturated. @default 0.1 */
  minGainPerDoubling?: number;
  /** TTFT p99 must grow by at least this fraction across the step to call it a knee. @default 0.25 */
  minTtftClimb?: number;
  /** Recommended points keep TTFT p99 at or below ceiling x headroom. @default 0.8 */
  headroom?: number;
}

/** The knee of a sweep and a recommended operating point below it. */
export interface KneeResult {
  kneeConcurrency: number | null;
  recommendedConcurrency: number | null;
  explanation: string;
}

const fmt = (v: number): string => Math.round(v).toLocaleString('en-US');

/**
 * Finds the knee: the first concurrency from which the next step adds under 10% throughput per
 * doubling while TTFT p99 climbs. Recommends the largest point below the knee whose TTFT p99
 * stays under the ceiling with headroom.
 *
 * @example
 * findKnee([{ concurrency: 64, throughput: 40e3, ttftP99Ms: 150 }, { concurrency: 128, throughput: 75e3, ttftP99Ms: 200 },
 *   { concurrency: 256, throughput: 80e3, ttftP99Ms: 900 }], { ttftCeilingMs: 2000 }); // knee 128, recommended 64
 */
export function findKnee(points: readonly SweepPoint[], opts: KneeOptions = {}): KneeResult {
  const minGain = opts.minGainPerDoubling ?? 0.1;
  const minClimb = opts.minTtftClimb ?? 0.25;
  const headroom = opts.headroom ?? 0.8;
  const pts = points.filter((p) => p.concurrency > 0 && Number.isFinite(p.throughput) && Number.isFinite(p.ttftP99Ms))
    .sort((a, b) => a.concurrency - b.concurrency);
  if (pts.length < 2) {
    return { kneeConcurrency: null, recommendedConcurrency: pts[0]?.concurrency ?? null, explanation: 'A knee needs at least two sweep points.' };
  }
  const ceiling = opts.ttftCeilingMs;
  const underCeiling = (p: SweepPoint): boolean => ceiling === undefined || p.ttftP99Ms <= ceiling * headroom;
  let knee: { at: SweepPoint; next: SweepPoint; gain: number } | null = null;
  for (let i = 0; i + 1 < pts.length; i++) {
    const a = pts[i]!;
    const b = pts[i + 1]!;
    const doublings = Math.log2(b.concurrency / a.concurrency);
    if (doublings <= 0) continue;
    const gain = a.throughput > 0 ? (b.throughput / a.throughput) ** (1 / doublings) - 1 : Number.POSITIVE_INFINITY;
    const climbs = b.ttftP99Ms >= a.ttftP99Ms * (1 + minClimb);
    if (gain < minGain && climbs) {
      knee = { at: a, next: b, gain };
      break;
    }
  }
  if (!knee) {
    const ok = pts.filter(underCeiling);
    const rec = ok.length > 0 ? ok[ok.length - 1]! : null;
    return {
      kneeConcurrency: null,
      recommendedConcurrency: rec?.concurrency ?? null,
      explanation: `No knee up to concurrency ${pts[pts.length - 1]!.concurrency}: each doubling still added at least ${Math.round(minGain * 100)}% throughput or TTFT p99 held${rec ? `; recommended ${rec.concurrency} (${fmt(rec.throughput)} tok/s, TTFT p99 ${fmt(rec.ttftP99Ms)} ms)` : '; no point kept TTFT p99 under the ceiling with headroom'}.`,
    };
  }
  const below = pts.filter((p) => p.concurrency < knee.at.concurrency && underCeiling(p));
  const rec = below.length > 0 ? below[below.length - 1]! : null;
  const kneeText = `Knee at concurrency ${knee.at.concurrency}: going to ${knee.next.concurrency} added ${Math.round(knee.gain * 1000) / 10}% throughput per doubling (${fmt(knee.at.throughput)} -> ${fmt(knee.next.throughput)} tok/s) while TTFT p99 rose ${fmt(knee.at.ttftP99Ms)} -> ${fmt(knee.next.ttftP99Ms)} ms`;
  const recText = rec
    ? `; recommended ${rec.concurrency} (${fmt(rec.throughput)} tok/s, ${Math.round((rec.throughput / knee.at.throughput) * 100)}% of the knee's throughput, TTFT p99 ${fmt(rec.ttftP99Ms)} ms${ceiling !== undefined ? ` under ${Math.round(headroom * 100)}% of the ${fmt(ceiling)} ms ceiling` : ''})`
    : '; no sweep point below the knee kept TTFT p99 under the ceiling with headroom';
  return { kneeConcurrency: knee.at.concurrency, recommendedConcurrency: rec?.concurrency ?? null, explanation: `${kneeText}${recText}.` };
}
