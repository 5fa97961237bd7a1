import { appendFile, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { TailgateError } from '../core/index.js';

/** One watch run, one line of `history.jsonl`. */
export interface HistoryEntry {
  /** 1-based. */
  run: number;
  startedAt: string;
  finishedAt: string;
  /** `cancelled`: the watch was stopped before the run measured enough to judge. */
  verdict: 'pass' | 'fail' | 'flaky' | 'cancelled';
  /** Passed its gates, but with a named shape other than `clean` or worker warnings. */
  degraded: boolean;
  /** Shape of the run's trial (the first failing one when several). */
  shape: string;
  /** The worker the shape names (`host:port`), or null. */
  worker: string | null;
  /** Where the trouble lives (`engine-host`, `gpu`, `router`, ...) for a failing run; null otherwise. */
  locus: string | null;
  /** Workers that answered readiness, in order. */
  workers: string[];
  /** The gated figures (`time_to_first_token.p99`) of the run's trial. */
  figures: Record<string, number | null>;
  /** Units of `figures`. */
  units: Record<string, string>;
  reason: string;
  /** The serve probe before the trial took longer than the TTFT ceiling's limit: the trouble came before the trial could see it. */
  probeSlow?: boolean;
  /** Stopped part-way by the watch's end: kept in the history, left out of every window. */
  interrupted?: boolean;
  /** The run's output folder, relative to the history file. */
  dir: string;
}

/** A stretch of failing (or degraded, between failing) runs. */
export interface TroubleWindow {
  /** 1-based, in time order. */
  index: number;
  start: string;
  end: string;
  runs: number[];
  failing: number;
  degraded: number;
  /** The shape most of its failing runs had. */
  shape: string;
  /** The worker most of its failing runs named, or null. */
  worker: string | null;
}

const bad = (message: string): TailgateError => new TailgateError('CONFIG_INVALID', message);

/** Appends one entry to the history file (JSON lines). */
export async function appendHistory(file: string, entry: HistoryEntry): Promise<void> {
  await appendFile(file, `${JSON.stringify(entry)}\n`);
}

/**
 * Reads `history.jsonl`; a line that is not an entry names its line number.
 *
 * @throws TailgateError CONFIG_INVALID when the file is missing or malformed
 */
export async function readHistory(file: string): Promise<HistoryEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw bad(`cannot read the watch history ${file}`);
  }
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return [];
    try {
      const e = JSON.parse(line) as HistoryEntry;
      if (typeof e.run !== 'number' || typeof e.startedAt !== 'string' || typeof e.dir !== 'string') throw new Error('not an entry');
      return [e];
    } catch {
      throw bad(`${file}:${i + 1} is not a watch history entry`);
    }
  });
}

/** A run that counts as failing for the windows: its verdict, or a serve probe slower than the TTFT ceiling. */
const troubled = (e: HistoryEntry): boolean => (e.verdict !== 'pass' && e.verdict !== 'cancelled') || e.probeSlow === true;

const mostOf = (xs: readonly string[]): string | null => {
  const n = new Map<string, number>();
  for (const x of xs) n.set(x, (n.get(x) ?? 0) + 1);
  return [...n].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
};

/**
 * Marks the windows of trouble in a history: each maximal run of consecutive failing or degraded
 * runs that holds at least one failing run (a failed verdict, or a serve probe slower than the TTFT
 * ceiling: a stall the probe waited out is over before the trial starts), from the first's start to the last's end, with the
 * shape (and worker) that dominated its failing runs. A degraded run alone is not a window; a run
 * the watch's end cut short, or a client-bound one (the client, not the fleet, was the limit), is in none.
 *
 * @example markWindows(await readHistory('out/history.jsonl')); // [{ index: 1, start, end, shape: 'single-worker-backup', ... }]
 */
export function markWindows(entries: readonly HistoryEntry[]): TroubleWindow[] {
  const out: TroubleWindow[] = [];
  let open: HistoryEntry[] = [];
  const close = (): void => {
    // Trailing degraded runs after the last failing one stay in the window: they are its tail.
    const failing = open.filter(troubled);
    if (failing.length > 0) {
      out.push({
        index: out.length + 1,
        start: open[0]!.startedAt,
        end: open[open.length - 1]!.finishedAt,
        runs: open.map((e) => e.run),
        failing: failing.length,
        degraded: open.length - failing.length,
        shape: mostOf(failing.map((e) => (e.verdict === 'pass' && e.probeSlow === true ? 'slow-serve-probe' : e.shape))) ?? 'unknown',
        worker: mostOf(failing.map((e) => e.worker).filter((w): w is string => w !== null)),
      });
    }
    open = [];
  };
  for (const e of entries) {
    // A run cut short, or one whose client was the bottleneck, says nothing about the fleet.
    if (e.interrupted === true || e.verdict === 'cancelled' || e.shape === 'client-bound') continue;
    if (troubled(e) || e.degraded) open.push(e);
    else close();
  }
  close();
  return out;
}

/** The runs a side names: `3` (window 3), `quiet` (runs outside every window), `all`, or `FROM/TO` (ISO times). */
function selectRuns(spec: string, entries: readonly HistoryEntry[], windows: readonly TroubleWindow[]): HistoryEntry[] {
  if (/^\d+$/.test(spec)) {
    const w = windows[Number(spec) - 1];
    if (!w) throw bad(`the history has ${windows.length} window(s); there is no window ${spec}`);
    return entries.filter((e) => w.runs.includes(e.run));
  }
  if (spec === 'all') return [...entries];
  if (spec === 'quiet') {
    const inWindow = new Set(windows.flatMap((w) => w.runs));
    return entries.filter((e) => !inWindow.has(e.run));
  }
  const m = /^([^/]+)\/([^/]+)$/.exec(spec);
  const from = m ? Date.parse(m[1]!) : Number.NaN;
  const to = m ? Date.parse(m[2]!) : Number.NaN;
  if (Number.isNaN(from) || Number.isNaN(to)) throw bad(`"${spec}" names no runs: give a window number, quiet, all, or FROM/TO times such as 2026-12-06T09:00Z/2026-12-06T12:00Z`);
  return entries.filter((e) => Date.parse(e.startedAt) >= from && Date.parse(e.startedAt) < to);
}

/**
 * The output folders of the runs each side names in a watch history, for `tailgate compare --history`.
 *
 * @example await historySides('out/history.jsonl', 'quiet', '1'); // { a: [...quiet runs], b: [...window 1's runs] }
 * @throws TailgateError CONFIG_INVALID when a side names no run
 */
export async function historySides(file: string, a: string, b: string): Promise<{ a: string[]; b: string[] }> {
  const entries = await readHistory(file);
  const windows = markWindows(entries);
  const dirs = (spec: string, side: string): string[] => {
    const runs = selectRuns(spec, entries, windows);
    if (runs.length === 0) throw bad(`side ${side} (${spec}) names no run of ${file}`);
    return runs.map((e) => (isAbsolute(e.dir) ? e.dir : join(dirname(file), e.dir)));
  };
  return { a: dirs(a, 'A'), b: dirs(b, 'B') };
}
