/** One sample of the Prometheus text exposition format. */
export interface Sample {
  /** Series name as printed (`vllm:request_success_total`, `..._bucket`, `..._created`). */
  name: string;
  labels: Record<string, string>;
  value: number;
  /** The optional trailing timestamp (ms since the epoch); null when absent. */
  timestampMs: number | null;
}

/** `# HELP` / `# TYPE` information of one metric family. */
export interface MetricFamily {
  name: string;
  type: string | null;
  help: string | null;
}

/** A parsed exposition: samples in page order, families by name, and how many lines could not be read. */
export interface PrometheusPage {
  samples: Sample[];
  families: Map<string, MetricFamily>;
  malformedLines: number;
}

const SPACE = 32;
const TAB = 9;

/**
 * Parses the classic Prometheus text format (what vLLM, SGLang, dcgm-exporter and prom-client
 * print) into samples. Escaped label values, `+Inf`/`-Inf`/`NaN`, Go-style floats (`1.8e+06`) and
 * optional timestamps are read; `_created`, `_bucket`, `_sum`, `_count` series stay separate samples.
 * Malformed lines are skipped (counted by `parsePrometheus`).
 *
 * @example parsePrometheusText('up{job="a"} 1\n') // [{ name: 'up', labels: { job: 'a' }, value: 1, timestampMs: null }]
 */
export function parsePrometheusText(text: string): Sample[] {
  return parsePrometheus(text).samples;
}

/** `parsePrometheusText` plus the `# HELP`/`# TYPE` family information and a malformed-line count. */
export function parsePrometheus(text: string): PrometheusPage {
  const samples: Sample[] = [];
  const families = new Map<string, MetricFamily>();
  let malformedLines = 0;
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    let eol = text.indexOf('\n', pos);
    if (eol < 0) eol = n;
    let end = eol;
    if (end > pos && text.charCodeAt(end - 1) === 13) end--;
    const start = skipWs(text, pos, end);
    if (start < end) {
      if (text.charCodeAt(start) === 35 /* # */) readComment(text.slice(start, end), families);
      else {
        const s = readSample(text, start, end);
        if (s === null) malformedLines++;
        else samples.push(s);
      }
    }
    pos = eol + 1;
  }
  return { samples, families, malformedLines };
}

function skipWs(t: string, i: number, end: number): number {
  while (i < end) {
    const c = t.charCodeAt(i);
    if (c !== SPACE && c !== TAB) break;
    i++;
  }
  return i;
}

function readComment(line: string, families: Map<string, MetricFamily>): void {
  const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
  if (m === null) return;
  const name = m[2]!;
  const rest = m[3] ?? '';
  let f = families.get(name);
  if (f === undefined) {
    f = { name, type: null, help: null };
    families.set(name, f);
  }
  if (m[1] === 'TYPE') f.type = rest.trim();
  else f.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
}

function readSample(t: string, i: number, end: number): Sample | null {
  const nameStart = i;
  while (i < end) {
    const c = t.charCodeAt(i);
    if (c === 123 /* { */ || c === SPACE || c === TAB) break;
    i++;
  }
  if (i === nameStart) return null;
  const name = t.slice(nameStart, i);
  const labels: Record<string, string> = {};
  i = skipWs(t, i, end);
  if (t.charCodeAt(i) === 123) {
    i++;
    while (true) {
      i = skipWs(t, i, end);
      if (i >= end) return null;
      if (t.charCodeAt(i) === 125 /* } */) {
        i++;
        break;
      }
      const ln = i;
      while (i < end) {
        const c = t.charCodeAt(i);
        if (c === 61 /* = */ || c === SPACE || c === TAB) break;
        i++;
      }
      const labelName = t.slice(ln, i);
      i = skipWs(t, i, end);
      if (labelName.length === 0 || t.charCodeAt(i) !== 61) return null;
      i = skipWs(t, i + 1, end);
      if (t.charCodeAt(i) !== 34 /* " */) return null;
      i++;
      let value = '';
      let chunk = i;
      while (true) {
        if (i >= end) return null;
        const c = t.charCodeAt(i);
        if (c === 34) break;
        if (c === 92 /* \ */) {
          value += t.slice(chunk, i);
          const e = t.charCodeAt(i + 1);
          value += e === 110 ? '\n' : e === 34 ? '"' : e === 92 ? '\\' : `\\${t.charAt(i + 1)}`;
          i += 2;
          chunk = i;
          continue;
        }
        i++;
      }
      value += t.slice(chunk, i);
      i++;
      labels[labelName] = value;
      i = skipWs(t, i, end);
      const c = t.charCodeAt(i);
      if (c === 44 /* , */) i++;
      else if (c !== 125) return null;
    }
    i = skipWs(t, i, end);
  }
  const vs = i;
  while (i < end && t.charCodeAt(i) !== SPACE && t.charCodeAt(i) !== TAB) i++;
  const value = parseGoFloat(t.slice(vs, i));
  if (value === null) return null;
  i = skipWs(t, i, end);
  let timestampMs: number | null = null;
  if (i < end) {
    const ts = t.slice(i, end).trimEnd();
    if (!/^-?\d+$/.test(ts)) return null;
    timestampMs = Number(ts);
  }
  return { name, labels, value, timestampMs };
}

/** Parses a float as Go's `strconv.ParseFloat` prints/reads it (`+Inf`, `-Inf`, `NaN`, exponents); null if invalid. */
export function parseGoFloat(s: string): number | null {
  if (s.length === 0) return null;
  const v = Number(s);
  if (!Number.isNaN(v)) return v;
  switch (s.toLowerCase()) {
    case 'nan':
      return NaN;
    case '+inf':
    case 'inf':
    case '+infinity':
    case 'infinity':
      return Infinity;
    case '-inf':
    case '-infinity':
      return -Infinity;
    default:
      return null;
  }
}

/** Formats a number the way Prometheus clients print values (`+Inf`, `-Inf`, `NaN`). */
export function formatGoFloat(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  if (Object.is(v, -0)) return '-0';
  return String(v);
}

function escapeLabel(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** Prints samples in the classic text format (label values escaped); `parsePrometheusText` reads it back. */
export function formatPrometheusText(samples: readonly Sample[]): string {
  let out = '';
  for (const s of samples) {
    const keys = Object.keys(s.labels);
    const labels = keys.length === 0 ? '' : `{${keys.map((k) => `${k}="${escapeLabel(s.labels[k]!)}"`).join(',')}}`;
    out += `${s.name}${labels} ${formatGoFloat(s.value)}${s.timestampMs === null ? '' : ` ${s.timestampMs}`}\n`;
  }
  return out;
}

/**
 * Sums the values of every series named `name` whose labels include `where` (all series when omitted).
 *
 * @example sumSamples(samples, 'vllm:request_success_total') // 1529 on src/scrape/testdata/vllm-metrics.txt
 */
export function sumSamples(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  const keys = Object.keys(where);
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (keys.every((k) => s.labels[k] === where[k])) sum += s.value;
  }
  return sum;
}
