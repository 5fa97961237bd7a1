import { formatConsoleTable } from '../report/index.js';
import type { BenchProgress } from './options.js';
import type { BenchResult } from './run-bench.js';

/** The end-of-run console text: AIPerf-like metrics table, self-checks, per-worker split, warnings. */
export function formatBenchReport(result: BenchResult): string {
  const s = result.selfCheck;
  const lines = [formatConsoleTable(result.summary).trimEnd()];
  const lag = s.scheduleLagP99Ms === null ? '' : `, schedule lag p99 ${s.scheduleLagP99Ms.toFixed(1)} ms`;
  lines.push(
    `self-check: event-loop delay p99 ${s.eventLoopDelayP99Ms.toFixed(1)} ms${lag}, client CPU ${s.cpuPercent.toFixed(0)}% of one core${s.clientBound ? ' (CLIENT-BOUND)' : ''}`,
  );
  const workers = Object.entries(result.summary.perWorker);
  if (workers.length > 0) {
    lines.push('per worker: requests (share), TTFT p99');
    for (const [id, w] of workers.sort(([a], [b]) => a.localeCompare(b))) {
      const p99 = w.ttftP99Ms === null ? 'n/a' : `${w.ttftP99Ms.toFixed(1)} ms`;
      lines.push(`  ${id}  ${w.requests} (${(w.shareOfRequests * 100).toFixed(1)}%), ${p99}`);
    }
  }
  for (const g of result.summary.errorSummary.slice(0, 5)) {
    lines.push(`errors: ${g.count} x ${g.kind}${g.status === null ? '' : ` ${g.status}`}: ${g.message}`);
  }
  const adaptive = result.adaptiveScale?.summary;
  if (adaptive !== undefined) {
    lines.push(`adaptive scale: ${String(adaptive['status'])} (${String(adaptive['completed_reason'])}): boundary ${String(adaptive['boundary_value'])}, last passing ${String(adaptive['last_passing_value'])}, first failing ${String(adaptive['first_failing_value'])} (${String(adaptive['control_variable'])})`);
  }
  for (const w of result.warnings) lines.push(`warning: ${w}`);
  if (result.stoppedEarly !== undefined) lines.push(`stopped early: ${result.stoppedEarly}; results cover what was measured until then`);
  else if (result.cancelled) lines.push('cancelled: results cover what was measured before the interrupt');
  return `${lines.join('\n')}\n`;
}

/** One progress line (no newline) for a TTY: phase, done/total, in flight, errors, elapsed. */
export function formatProgress(p: BenchProgress): string {
  const total = p.total === null ? '' : `/${p.total}`;
  const pct = p.total ? ` ${((100 * p.completed) / p.total).toFixed(0)}%` : p.durationMs ? ` ${Math.min(100, (100 * p.elapsedMs) / p.durationMs).toFixed(0)}%` : '';
  return `${p.phase} ${p.completed}${total}${pct} | in flight ${p.inflight} | errors ${p.errors} | ${(p.elapsedMs / 1000).toFixed(1)} s`;
}
