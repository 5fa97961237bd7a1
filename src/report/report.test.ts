/* eslint-disable @typescript-eslint/no-explicit-any -- assertions walk parsed JSON */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarize, syntheticError, syntheticRecord } from '../stats/index.js';
import {
  AIPERF_FILES, formatConsoleTable, junitXml, lineChartSvg, niceTicks, renderHtmlReport, writeAiperfExports, type Chart,
} from './index.js';

function sampleRecords() {
  return [
    syntheticRecord({ phase: 'warmup', startMs: 0, ttftMs: 900, itlMs: 10, tokens: 8, worker: '127.0.0.1:9001' }),
    ...Array.from({ length: 20 }, (_, i) =>
      syntheticRecord({ id: `req-${i}`, startMs: 100 + i * 10, ttftMs: 50 + i, itlMs: 5, tokens: 16, worker: `127.0.0.1:900${i % 2}`, serverTokens: true })),
    syntheticError({ startMs: 150, endMs: 180, status: 500, error: 'boom "quoted"' }),
  ];
}

test('AIPerf exports round-trip: JSON blocks, CSV layout, JSONL records', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-report-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const records = sampleRecords();
  const summary = summarize(records);
  const startTime = new Date('2026-12-02T14:00:00.000Z');
  await writeAiperfExports(dir, {
    summary, records, inputConfig: { concurrency: 4, random_seed: 100 }, exportLevel: 'records',
    startTime, endTime: new Date('2026-12-02T14:00:01.000Z'), extra: { seed: 100 },
  });

  const json = JSON.parse(await readFile(join(dir, AIPERF_FILES.json), 'utf8')) as Record<string, any>;
  // The way existing validators read AIPerf output.
  assert.equal(typeof json.output_token_throughput.avg, 'number');
  assert.equal(typeof json.time_to_first_token.p99, 'number');
  assert.equal(json.output_token_throughput.unit, 'tokens/sec');
  assert.deepEqual(Object.keys(json.request_throughput), ['unit', 'avg']);
  assert.equal(json.time_to_first_token.count, 20);
  assert.equal(json.schema_version, '1.5');
  assert.equal(json.aiperf_version, null, 'no AIPerf release wrote this file');
  assert.deepEqual(json.generator, { name: 'tailgate', version: '0.1.0' });
  assert.equal(json.tailgate.version, '0.1.0');
  assert.equal(json.start_time, '2026-12-02T14:00:00.000Z');
  assert.equal(json.was_cancelled, false);
  assert.deepEqual(json.input_config, { concurrency: 4, random_seed: 100 });
  assert.deepEqual(json.error_summary, [{ error_details: { code: 500, type: 'http_error', message: 'boom "quoted"' }, count: 1 }]);
  assert.equal(json.tailgate.seed, 100);
  assert.equal(json.tailgate.per_worker['127.0.0.1:9001'].requests, 10);

  const csv = await readFile(join(dir, AIPERF_FILES.csv), 'utf8');
  const [dist, scalars] = csv.split('\n\n');
  const distLines = dist!.split('\n');
  assert.equal(distLines[0], 'Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std');
  assert.match(distLines[1]!, /^Request Latency \(ms\)(,\d+\.\d\d){13}$/);
  assert.match(distLines[2]!, /^Time to First Token \(ms\)(,\d+\.\d\d){13}$/);
  assert.ok(distLines.every((l) => l.split(',').length === 14));
  const scalarLines = scalars!.trim().split('\n');
  assert.equal(scalarLines[0], 'Metric,Value');
  assert.ok(scalarLines.some((l) => /^Output Token Throughput \(tokens\/sec\),\d+\.\d\d$/.test(l)));
  assert.ok(scalarLines.includes('Request Count,20.00'));

  const lines = (await readFile(join(dir, AIPERF_FILES.jsonl), 'utf8')).trim().split('\n');
  assert.equal(lines.length, 21); // warm-up excluded
  const first = JSON.parse(lines[0]!) as Record<string, any>;
  assert.equal(first.metadata.benchmark_phase, 'profiling');
  assert.equal(first.metadata.tailgate_worker, '127.0.0.1:9000');
  assert.notEqual(first.metadata.worker_id, '127.0.0.1:9000');
  assert.equal(first.metrics.time_to_first_token.unit, 'ms');
  assert.equal(first.metrics.time_to_first_token.value, 50);
  assert.equal(first.metrics.inter_chunk_latency.value.length, 15);
  assert.equal(first.error, null);
  // Nanoseconds are exact integers in the text (beyond 2^53, so check the digits).
  const ns = /"request_start_ns":(\d+)/.exec(lines[0]!)![1]!;
  assert.equal(BigInt(ns), BigInt(startTime.getTime()) * 1_000_000n + 100_000_000n);
  const failed = lines.map((l) => JSON.parse(l) as Record<string, any>).find((r) => r.error !== null)!;
  assert.deepEqual(failed.error, { code: 500, type: 'http_error', message: 'boom "quoted"' });
  assert.equal(failed.metrics.error_isl.value, 128);
});

test('export level summary writes no JSONL; cancelled runs say so', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-report-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const records = sampleRecords();
  await writeAiperfExports(dir, {
    summary: summarize(records), records, inputConfig: {}, exportLevel: 'summary',
    startTime: new Date(), endTime: new Date(), wasCancelled: true,
  });
  await assert.rejects(readFile(join(dir, AIPERF_FILES.jsonl)));
  const json = JSON.parse(await readFile(join(dir, AIPERF_FILES.json), 'utf8')) as Record<string, unknown>;
  assert.equal(json.was_cancelled, true);
});

test('console table lists the main metrics with thousands separators', () => {
  const text = formatConsoleTable(summarize(sampleRecords()));
  assert.match(text, /Time to First Token \(ms\)/);
  assert.match(text, /Output Token Throughput \(tokens\/sec\)/);
  assert.match(text, /┌/);
  const widths = new Set(text.trim().split('\n').slice(1).map((l) => l.length));
  assert.equal(widths.size, 1, 'every row of the box has the same width');
});

test('junit XML counts failures and escapes messages', () => {
  const xml = junitXml([{ name: 'trial <1>', cases: [
    { name: 'ttft p99 <= 2000', classname: 'tailgate.gate', timeMs: 1500, failure: null },
    { name: 'throughput >= 50000', classname: 'tailgate.gate', timeMs: 1500, failure: 'got 41000 & "less"\nmore' },
  ] }]);
  assert.match(xml, /^<\?xml version="1.0"/);
  assert.match(xml, /<testsuites name="tailgate" tests="2" failures="1"/);
  assert.match(xml, /<testsuite name="trial &lt;1&gt;" id="0" package="tailgate" hostname="[^"]+" timestamp="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d" tests="2" failures="1"/);
  assert.match(xml, /name="ttft p99 &lt;= 2000" classname="tailgate.gate" time="1.500"\/>/);
  assert.match(xml, /<failure message="got 41000 &amp; &quot;less&quot;" type="GateFailure">got 41000 &amp; &quot;less&quot;\nmore<\/failure>/);
});

function chart(id: string, n: number, extra: Partial<Chart> = {}): Chart {
  return {
    id, title: `Chart ${id} <b>`, xLabel: 'time (s)', yLabel: 'in-flight', kind: 'step',
    series: Array.from({ length: n }, (_, i) => ({ name: `worker-${i}`, points: Array.from({ length: 50 }, (_, k): [number, number] => [k, (k * (i + 1)) % 37]) })),
    ...extra,
  };
}

test('HTML report: one svg per chart, one path per series, escaped text, self-contained', () => {
  const html = renderHtmlReport({
    title: 'Demo <script>alert(1)</script>',
    subtitle: 'a & b',
    meta: { seed: '100' },
    sections: [
      { title: 'Table', text: 'para one\n\npara <two>', table: { columns: ['policy', 'tok/s', 'verdict'], rows: [['round-robin', 41234.5, 'fail'], ['adaptive', 120000, 'pass']] } },
      { title: 'Charts', charts: [chart('inflight', 8), chart('ttft', 3, { kind: 'line', yLog: true, markers: [{ x: 10, label: 'stall <starts>' }] })] },
    ],
  });
  assert.ok(html.startsWith('<!DOCTYPE html>'));
  assert.ok(!html.includes('<script>alert'));
  assert.ok(html.includes('Demo &lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(html.includes('para &lt;two&gt;'));
  assert.ok(html.includes('stall &lt;starts&gt;'));
  assert.ok(!/<script|<link|src=|href=/i.test(html), 'no scripts or external resources');
  const svgs = html.match(/<svg class="chart" data-chart-id="([^"]+)"[\s\S]*?<\/svg>/g)!;
  assert.equal(svgs.length, 2);
  assert.equal(svgs[0]!.match(/<path /g)!.length, 8);
  assert.equal(svgs[1]!.match(/<path /g)!.length, 3);
  assert.match(html, /data-chart-id="inflight"/);
  assert.match(html, /<td class="num">41,234.50<\/td>/);
  assert.match(html, /<td class="fail">fail<\/td>/);
});

test('line chart handles empty series, single points, 12 series and huge inputs', () => {
  const empty = lineChartSvg({ id: 'e', title: 'empty', xLabel: 'x', yLabel: 'y', kind: 'line', series: [{ name: 'none', points: [] }] });
  assert.equal(empty.match(/<path /g)!.length, 1);
  assert.ok(!/NaN|Infinity/.test(empty));
  const one = lineChartSvg({ id: 'o', title: 'one', xLabel: 'x', yLabel: 'y', kind: 'line', series: [{ name: 'p', points: [[5, 5]] }] });
  assert.ok(!/NaN|Infinity/.test(one));
  const many = lineChartSvg(chart('many', 12));
  assert.equal(many.match(/<path /g)!.length, 12);
  assert.equal(many.match(/class="legend-item"/g)!.length, 12);
  assert.match(many, /stroke-dasharray="6 3"/); // series 11 and 12 reuse colours with dashes
  const big = lineChartSvg({ id: 'b', title: 'big', xLabel: 'x', yLabel: 'y', kind: 'line',
    series: [{ name: 's', points: Array.from({ length: 200_000 }, (_, i): [number, number] => [i, i === 123_456 ? 1e6 : i % 100]) }] });
  assert.ok(big.length < 200_000, 'decimated');
  assert.ok(!/NaN|Infinity/.test(big));
  assert.match(big, /1M/); // the spike survived decimation and set the axis
});

test('niceTicks covers the range with round steps', () => {
  assert.deepEqual(niceTicks(0, 100), [0, 20, 40, 60, 80, 100]);
  const t = niceTicks(0, 1);
  assert.equal(t.length, 6);
  assert.equal(t[0], 0);
  assert.ok(Math.abs(t[5]! - 1) < 1e-9);
  assert.deepEqual(niceTicks(0, 2300), [0, 500, 1000, 1500, 2000, 2500].filter((v) => v <= 2300));
});
