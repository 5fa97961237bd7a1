// `--endpoint-type embeddings` against the fleet's /v1/embeddings: AIPerf's body ({model, input:[texts]},
// no output length, no stream) and AIPerf's metrics for an endpoint that produces no tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

test('--endpoint-type embeddings sends AIPerf\'s embeddings bodies and writes its records and metrics without output tokens', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'e5' });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-embeddings-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['bench', '-m', 'e5', '--tokenizer', 'builtin', '-u', fleet.workers[0]!.url, '--endpoint-type', 'embeddings', '--streaming',
    '--concurrency', '4', '--request-count', '20', '--isl', '24', '--osl', '16', '--extra-inputs', 'encoding_format:float',
    '--export-level', 'raw', '--artifact-dir', dir], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /--streaming: the embeddings endpoint does not stream/);

  const inputs = JSON.parse(readFileSync(join(dir, 'inputs.json'), 'utf8')) as { data: { payloads: Record<string, unknown>[] }[] };
  const body = inputs.data[0]!.payloads[0]!;
  assert.deepEqual(Object.keys(body).sort(), ['encoding_format', 'input', 'model']);
  assert.equal(body['model'], 'e5');
  assert.ok(Array.isArray(body['input']) && (body['input'] as string[]).length === 1);
  assert.equal((body['input'] as string[])[0]!.split(' ').length, 24, 'the prompt, ISL words long');

  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg: number; count?: number }>;
  assert.equal(doc['request_count']!.avg, 20);
  assert.equal(doc['request_latency']!.count, 20);
  assert.equal(doc['input_sequence_length']!.avg, 24);
  assert.equal(doc['total_isl']!.avg, 480);
  assert.ok(doc['request_throughput']!.avg > 0);
  for (const tag of ['time_to_first_token', 'inter_token_latency', 'output_sequence_length', 'output_token_count', 'output_token_throughput', 'total_token_throughput', 'total_osl', 'total_output_tokens']) {
    assert.ok(!(tag in doc), `${tag} is not written for embeddings`);
  }
  assert.equal((doc['input_config'] as unknown as { endpoint: { type: string } }).endpoint.type, 'embeddings');

  const records = readFileSync(join(dir, 'profile_export.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { metrics: Record<string, unknown>; error: unknown });
  assert.equal(records.length, 20);
  for (const rec of records) {
    assert.equal(rec.error, null);
    assert.deepEqual(Object.keys(rec.metrics).sort(), ['input_sequence_length', 'request_latency', 'usage_prompt_tokens']);
  }
  const raw = JSON.parse(readFileSync(join(dir, 'profile_export_raw.jsonl'), 'utf8').split('\n')[0]!) as { request: { input: string[] } };
  assert.equal(raw.request.input.length, 1, 'the body exactly as sent');
  assert.doesNotMatch(readFileSync(join(dir, 'profile_export_aiperf.csv'), 'utf8'), /Output Token|Time to First Token/);
});
