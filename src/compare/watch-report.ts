import type { Chart, ReportDoc } from '../report/index.js';
import type { HistoryEntry, TroubleWindow } from './history.js';

const minutes = (iso: string, t0: number): number => (Date.parse(iso) - t0) / 60_000;

/**
 * The watch as a page (`watch.html`): each gated figure over time with the windows of trouble
 * shaded, the windows as a table (start, end, runs, shape, worker), and the latest runs.
 *
 * @example writeFile('watch/watch.html', renderHtmlReport(watchReportDoc(entries, windows)));
 */
export function watchReportDoc(entries: readonly HistoryEntry[], windows: readonly TroubleWindow[]): ReportDoc {
  const t0 = entries.length > 0 ? Date.parse(entries[0]!.startedAt) : 0;
  const figures = [...new Set(entries.flatMap((e) => Object.keys(e.figures)))];
  const bands = windows.map((w) => ({ from: minutes(w.start, t0), to: Math.max(minutes(w.end, t0), minutes(w.start, t0) + 0.05), label: `window ${w.index}: ${w.shape}` }));
  const charts: Chart[] = figures.map((f) => ({
    id: `watch-${f.replace(/[^a-z0-9]+/gi, '-')}`,
    title: `${f} per run`,
    xLabel: `minutes from the first run (${entries[0]?.startedAt ?? ''})`,
    yLabel: entries.find((e) => e.units[f] !== undefined)?.units[f] ?? '',
    kind: 'line',
    series: [{ name: f, points: entries.filter((e) => typeof e.figures[f] === 'number').map((e) => [minutes(e.startedAt, t0), e.figures[f]!] as [number, number]) }],
    bands,
  }));
  const failing = entries.filter((e) => e.verdict !== 'pass').length;
  return {
    title: 'tailgate watch',
    subtitle: `${entries.length} runs, ${failing} failing, ${windows.length} window(s) of trouble`,
    meta: entries.length > 0 ? { from: entries[0]!.startedAt, to: entries[entries.length - 1]!.finishedAt, workers: String(entries[entries.length - 1]!.workers.length) } : {},
    sections: [
      {
        title: 'Windows of trouble',
        text: windows.length === 0
          ? 'No window: no run failed.'
          : `A window is a stretch of consecutive failing runs (degraded runs between them included). Compare one with the quiet runs: tailgate compare quiet 1 --history history.jsonl`,
        table: { columns: ['window', 'start', 'end', 'runs', 'failing', 'shape', 'worker'], rows: windows.map((w) => [w.index, w.start, w.end, w.runs.length, w.failing, w.shape, w.worker ?? '-']) },
      },
      { title: 'Gated figures over time', charts },
      {
        title: 'Latest runs',
        table: {
          columns: ['run', 'started', 'verdict', 'shape', 'worker', 'locus', ...figures],
          rows: entries.slice(-20).reverse().map((e) => [e.run, e.startedAt, `${e.verdict}${e.interrupted ? ' (cut short)' : e.degraded ? ' (degraded)' : ''}`, e.shape, e.worker ?? '-', e.locus ?? '-', ...figures.map((f) => (typeof e.figures[f] === 'number' ? Math.round(e.figures[f]! * 10) / 10 : '-'))]),
        },
      },
    ],
  };
}
