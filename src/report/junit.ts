import { escapeXml } from './escape.js';

/** One JUnit test case; `failure` null means it passed. */
export interface JunitCase {
  name: string;
  classname: string;
  timeMs: number;
  failure: string | null;
}

/** A named group of cases (e.g. one trial), with facts that are not failures as properties and system-out. */
export interface JunitSuite {
  name: string;
  cases: JunitCase[];
  properties?: { name: string; value: string }[];
  systemOut?: string;
}

const secs = (ms: number): string => (Math.max(0, ms) / 1000).toFixed(3);

/**
 * JUnit XML that CI systems (Jenkins, GitLab, GitHub reporters) read: one `<testsuite>` per
 * suite, a `<failure>` with the message for each failed case.
 *
 * @example
 * junitXml([{ name: 'trial-1', cases: [{ name: 'ttft p99 <= 2000', classname: 'tailgate.gate', timeMs: 1, failure: null }] }]);
 */
export function junitXml(suites: readonly JunitSuite[]): string {
  const total = suites.reduce((n, s) => n + s.cases.length, 0);
  const failures = suites.reduce((n, s) => n + s.cases.filter((c) => c.failure !== null).length, 0);
  const time = suites.reduce((t, s) => t + s.cases.reduce((u, c) => u + c.timeMs, 0), 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="tailgate" tests="${total}" failures="${failures}" errors="0" time="${secs(time)}">`,
  ];
  for (const s of suites) {
    const f = s.cases.filter((c) => c.failure !== null).length;
    const t = s.cases.reduce((u, c) => u + c.timeMs, 0);
    out.push(`  <testsuite name="${escapeXml(s.name)}" tests="${s.cases.length}" failures="${f}" errors="0" skipped="0" time="${secs(t)}">`);
    if (s.properties && s.properties.length > 0) {
      out.push('    <properties>', ...s.properties.map((p) => `      <property name="${escapeXml(p.name)}" value="${escapeXml(p.value)}"/>`), '    </properties>');
    }
    for (const c of s.cases) {
      const open = `    <testcase name="${escapeXml(c.name)}" classname="${escapeXml(c.classname)}" time="${secs(c.timeMs)}"`;
      if (c.failure === null) out.push(`${open}/>`);
      else {
        const firstLine = c.failure.split('\n')[0] ?? '';
        out.push(`${open}>`, `      <failure message="${escapeXml(firstLine)}" type="GateFailure">${escapeXml(c.failure)}</failure>`, '    </testcase>');
      }
    }
    if (s.systemOut !== undefined && s.systemOut !== '') out.push(`    <system-out>${escapeXml(s.systemOut)}</system-out>`);
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
