import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { formatPrometheusText, parsePrometheus, parsePrometheusText, sumSamples, type Sample } from './index.js';

const fixture = (name: string): string => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

test('vLLM /metrics fixture: counters, gauges, histograms, _created, families', () => {
  const page = parsePrometheus(fixture('vllm-metrics.txt'));
  assert.equal(page.malformedLines, 0);
  const s = page.samples;
  assert.equal(sumSamples(s, 'vllm:request_success_total'), 1529);
  assert.equal(sumSamples(s, 'vllm:request_success_total', { finished_reason: 'stop' }), 1180);
  assert.equal(sumSamples(s, 'vllm:e2e_request_latency_seconds_count'), 1529);
  assert.equal(sumSamples(s, 'vllm:time_to_first_token_seconds_count'), 1539);
  assert.equal(sumSamples(s, 'vllm:num_requests_running'), 14);
  assert.equal(sumSamples(s, 'vllm:num_requests_waiting'), 3);
  assert.equal(sumSamples(s, 'vllm:kv_cache_usage_perc'), 0.8704427083333334);
  assert.equal(sumSamples(s, 'process_virtual_memory_bytes'), 1.63842719744e11);
  const inf = s.find((x) => x.name === 'vllm:time_to_first_token_seconds_bucket' && x.labels['le'] === '+Inf');
  assert.ok(inf !== undefined);
  assert.equal(inf.value, 1539);
  assert.deepEqual(inf.labels, { engine: '0', le: '+Inf', model_name: 'Qwen/Qwen3-8B' });
  const created = s.find((x) => x.name === 'vllm:request_success_created');
  assert.ok(created !== undefined && created.value > 1.7e9);
  assert.equal(page.families.get('vllm:num_requests_running')?.type, 'gauge');
  assert.equal(page.families.get('vllm:request_success_created')?.type, 'gauge');
  assert.equal(page.families.get('vllm:kv_cache_usage_perc')?.help, 'KV-cache usage. 1 means 100 percent usage.');
  assert.deepEqual(s.find((x) => x.name === 'python_info')?.labels, { implementation: 'CPython', major: '3', minor: '12', patchlevel: '12', version: '3.12.12' });
  // TTFT count = ITL definition check from the fixture README: ITL count = generation tokens - TTFT count.
  assert.equal(sumSamples(s, 'vllm:inter_token_latency_seconds_count'), sumSamples(s, 'vllm:generation_tokens_total') - 1539);
});

test('dcgm-exporter fixture: per-GPU labels and values', () => {
  const page = parsePrometheus(fixture('dcgm-exporter-metrics.txt'));
  assert.equal(page.malformedLines, 0);
  const s = page.samples;
  assert.equal(sumSamples(s, 'DCGM_FI_DEV_GPU_UTIL', { gpu: '1' }), 12);
  assert.equal(sumSamples(s, 'DCGM_FI_DEV_GPU_UTIL', { gpu: '0' }), 95);
  const util1 = s.find((x) => x.name === 'DCGM_FI_DEV_GPU_UTIL' && x.labels['gpu'] === '1');
  assert.equal(util1?.labels['modelName'], 'NVIDIA H100 80GB HBM3');
  assert.equal(util1?.labels['pod'], 'vllm-qwen3-8b-7d9c5b8f6-m9q7t');
  assert.equal(sumSamples(s, 'DCGM_FI_DEV_POWER_USAGE', { gpu: '1' }), 131.582);
  assert.equal(page.families.get('DCGM_FI_DEV_CLOCKS_EVENT_REASONS')?.help, 'Current clock event reasons (bitmask).');
});

test('escapes, special values, timestamps, whitespace, CRLF; malformed lines are counted and skipped', () => {
  const text = [
    '# HELP m help with \\\\ and \\n escapes',
    '# TYPE m gauge',
    'm{a="q\\"uote",b="back\\\\slash",c="new\\nline",} +Inf 1700000000000',
    'm{a="x"} -Inf',
    'm{ a = "y" } NaN',
    'm\t1.843207e+06\r',
    'n 5 -12',
    'bad{a="unterminated} 1',
    'bad{a=1} 1',
    'bad 12abc',
    'bad{a="x"}',
    '',
    '   ',
  ].join('\n');
  const page = parsePrometheus(text);
  assert.equal(page.malformedLines, 4);
  assert.equal(page.families.get('m')?.help, 'help with \\ and \n escapes');
  const [a, b, c, d, e] = page.samples;
  assert.deepEqual(a, { name: 'm', labels: { a: 'q"uote', b: 'back\\slash', c: 'new\nline' }, value: Infinity, timestampMs: 1700000000000 });
  assert.equal(b?.value, -Infinity);
  assert.ok(Number.isNaN(c?.value));
  assert.deepEqual(c?.labels, { a: 'y' });
  assert.equal(d?.value, 1843207);
  assert.equal(e?.timestampMs, -12);
});

const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,6}$/);
const sample: fc.Arbitrary<Sample> = fc.record({
  name: fc.stringMatching(/^[a-zA-Z_:][a-zA-Z0-9_:]{0,12}$/),
  labels: fc.dictionary(labelName, fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\n', ',', '}', '{', '=', ' ', 'é'), fc.string({ maxLength: 1 })), maxLength: 8 }), { maxKeys: 4 }),
  value: fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Infinity, -Infinity, NaN, 0, -0, 1e-300, 1.7976931348623157e308)),
  timestampMs: fc.option(fc.integer({ min: -1e12, max: 4e12 }), { nil: null }),
});

test('property: any generated exposition round-trips through format + parse', () => {
  fc.assert(
    fc.property(fc.array(sample, { maxLength: 20 }), (samples) => {
      const back = parsePrometheusText(formatPrometheusText(samples));
      assert.equal(back.length, samples.length);
      for (let i = 0; i < samples.length; i++) {
        const x = samples[i]!;
        const y = back[i]!;
        assert.equal(y.name, x.name);
        assert.deepEqual(y.labels, { ...x.labels });
        assert.ok(Object.is(y.value, x.value), `${y.value} vs ${x.value}`);
        assert.equal(y.timestampMs, x.timestampMs);
      }
    }),
    { numRuns: 300, seed: 4242 },
  );
});
