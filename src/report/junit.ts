import { hostname } from 'node:os';
import { escapeXml } from './escape.js';

/** One JUnit test case; `failure` null means it passed. */
export interface JunitCase {
  name: string;
  classname: string;
  timeMs: number;
  failure: string | null;
  /** The `type` of the `<failure>`. @default 'GateFailure' */
  failureType?: string;
  /** Detail a person reads under the case (e.g. one line per trial). */
  systemOut?: string;
}

/** A named group of cases (e.g. the gates judged across trials). */
export interface JunitSuite {
  name: string;
  cases: JunitCase[];
  /** Wall time of the suite; without it, the sum of its cases. */
  timeMs?: number;
  /** When the suite started. @default when the XML is written */
  timestamp?: Date;
  /** Facts that are not failures, written as `<properties>` in this order. */
  properties?: { name: string; value: string }[];
  systemOut?: string;
}

/** Options of {@link junitXml}. */
export interface JunitOptions {
  /** @default os.hostname() */
  hostname?: string;
  /** Package of every suite (Ant's `package`). @default 'tailgate' */
  packageName?: string;
}

const secs = (ms: number): string => (Math.max(0, ms) / 1000).toFixed(3);
/** Ant's timestamp: ISO 8601 to the second, no zone (tailgate writes UTC). */
const antTimestamp = (d: Date): string => d.toISOString().slice(0, 19);
const caseTime = (s: JunitSuite): number => s.timeMs ?? s.cases.reduce((u, c) => u + c.timeMs, 0);

/**
 * JUnit XML that CI systems (Jenkins, GitLab, GitHub reporters) read, in the Ant layout: one
 * `<testsuite>` per suite with `id`, `package`, `hostname`, `timestamp` and `time`, its
 * `<properties>`, a `<failure>` with the message for each failed case, and `<system-out>`.
 *
 * @example
 * junitXml([{ name: 'gates', cases: [{ name: 'ttft p99 <= 2000', classname: 'tailgate.gate', timeMs: 1, failure: null }] }]);
 */
export function junitXml(suites: readonly JunitSuite[], opts: JunitOptions = {}): string {
  const host = opts.hostname ?? hostname();
  const pkg = opts.packageName ?? 'tailgate';
  const now = new Date();
  const total = suites.reduce((n, s) => n + s.cases.length, 0);
  const failures = suites.reduce((n, s) => n + s.cases.filter((c) => c.failure !== null).length, 0);
  const time = suites.reduce((t, s) => t + caseTime(s), 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="tailgate" tests="${total}" failures="${failures}" errors="0" time="${secs(time)}">`,
  ];
  suites.forEach((s, id) => {
    const f = s.cases.filter((c) => c.failure !== null).length;
    out.push(
      `  <testsuite name="${escapeXml(s.name)}" id="${id}" package="${escapeXml(pkg)}" hostname="${escapeXml(host)}" timestamp="${antTimestamp(s.timestamp ?? now)}" tests="${s.cases.length}" failures="${f}" errors="0" skipped="0" time="${secs(caseTime(s))}">`,
    );
    const props = s.properties ?? [];
    if (props.length > 0) {
      out.push('    <properties>', ...props.map((p) => `      <property name="${escapeXml(p.name)}" value="${escapeXml(p.value)}"/>`), '    </properties>');
    }
    for (const c of s.cases) {
      const open = `    <testcase name="${escapeXml(c.name)}" classname="${escapeXml(c.classname)}" time="${secs(c.timeMs)}"`;
      if (c.failure === null && c.systemOut === undefined) {
        out.push(`${open}/>`);
        continue;
      }
      out.push(`${open}>`);
      if (c.failure !== null) {
        const firstLine = c.failure.split('\n')[0] ?? '';
        out.push(`      <failure message="${escapeXml(firstLine)}" type="${escapeXml(c.failureType ?? 'GateFailure')}">${escapeXml(c.failure)}</failure>`);
      }
      if (c.systemOut !== undefined) out.push(`      <system-out>${escapeXml(c.systemOut)}</system-out>`);
      out.push('    </testcase>');
    }
    if (s.systemOut !== undefined && s.systemOut !== '') out.push(`    <system-out>${escapeXml(s.systemOut)}</system-out>`);
    out.push('  </testsuite>');
  });
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
