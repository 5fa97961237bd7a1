import { isMetricBlock, type Summary } from '../stats/index.js';
import { metricLabel } from './aiperf-exports.js';
import { formatNumber } from './escape.js';

const ROWS = [
  'time_to_first_token', 'time_to_second_token', 'request_latency', 'inter_token_latency',
  'output_token_throughput_per_user', 'output_sequence_length', 'input_sequence_length',
  'output_token_throughput', 'request_throughput', 'goodput', 'request_count', 'error_request_count', 'benchmark_duration',
];
const COLS = ['avg', 'min', 'max', 'p99', 'p90', 'p50', 'std'] as const;

/**
 * The main metrics as rows of formatted cells (run-level metrics show only avg), for the console
 * table and the HTML reports alike.
 *
 * @example
 * metricsTable(summary).rows[0]; // ['Time to First Token (ms)', '120.50', ...]
 */
export function metricsTable(summary: Summary): { columns: string[]; rows: string[][] } {
  const rows: string[][] = [];
  for (const tag of ROWS) {
    const m = summary.metrics[tag];
    if (!m) continue;
    const label = metricLabel(tag, m.unit);
    if (isMetricBlock(m)) rows.push([label, ...COLS.map((c) => formatNumber(m[c]))]);
    else rows.push([label, formatNumber(m.avg), ...COLS.slice(1).map(() => 'N/A')]);
  }
  return { columns: ['Metric', ...COLS], rows };
}

/**
 * An AIPerf-like console table of the main metrics (box drawing; run-level metrics show only avg).
 *
 * @example
 * process.stdout.write(formatConsoleTable(summary));
 */
export function formatConsoleTable(summary: Summary, title = 'tailgate | LLM Metrics'): string {
  const { columns: header, rows } = metricsTable(summary);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (l: string, m: string, r: string): string => `${l}${widths.map((w) => '─'.repeat(w + 2)).join(m)}${r}`;
  const fmt = (cells: string[]): string => `│${cells.map((c, i) => ` ${c.padStart(widths[i]!)} `).join('│')}│`;
  const out = [
    title.padStart(Math.floor((line('┌', '┬', '┐').length + title.length) / 2)),
    line('┌', '┬', '┐'),
    fmt(header),
    line('├', '┼', '┤'),
    ...rows.map(fmt),
    line('└', '┴', '┘'),
  ];
  return `${out.join('\n')}\n`;
}
