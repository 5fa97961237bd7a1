// Reasoning tokens: a stream that carries a reasoning channel, as vLLM's reasoning parsers send it
// (`delta.reasoning` in current vLLM, `delta.reasoning_content` in older builds and SGLang), and a
// usage chunk with `completion_tokens_details.reasoning_tokens`. bench splits the OSL as AIPerf does,
// and `--export-outputs-json` writes the texts (reasoning then answer) to outputs.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './helpers.js';

const REASONING = [' Okay,', ' the', ' user'];
const ANSWER = ['The', ' answer'];

/** One vLLM-style chat stream; request k names the reasoning field `reasoning` (even k) or `reasoning_content` (odd k). */
function stream(k: number): string[] {
  const field = k % 2 === 0 ? 'reasoning' : 'reasoning_content';
  const head = `{"id":"chatcmpl-${k}","object":"chat.completion.chunk","created":1789542731,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":`;
  const tail = ',"logprobs":null,"finish_reason":null,"token_ids":null}]}';
  return [
    `${head}{"role":"assistant","content":""}${tail}`,
    ...REASONING.map((t) => `${head}{"${field}":${JSON.stringify(t)}}${tail}`),
    ...ANSWER.map((t) => `${head}{"content":${JSON.stringify(t)}}${tail}`),
    `${head}{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}]}`,
    `{"id":"chatcmpl-${k}","object":"chat.completion.chunk","created":1789542731,"model":"Qwen/Qwen3-8B","choices":[],"usage":{"prompt_tokens":8,"total_tokens":13,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":3}}}`,
    '[DONE]',
  ];
}

test('a reasoning stream: reasoning_token_count, output_token_count and TTFO as AIPerf splits them, in the JSON and the records', async (t) => {
  let k = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = stream(k++);
      let i = 0;
      // Each event in its own read, a few ms apart, so the first answer token comes after the first reasoning token.
      const next = (): void => {
        if (i === events.length) return void res.end();
        res.write(`data: ${events[i++]}\n\n`);
        // A longer pause before the answer, so the first answer token arrives in a later read than the reasoning.
        setTimeout(next, i === 1 + REASONING.length ? 30 : 3);
      };
      next();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-reasoning-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const r = await runCli(['bench', '-m', 'Qwen/Qwen3-8B', '--tokenizer', 'builtin', '-u', url, '--streaming', '--concurrency', '2', '--request-count', '6',
    '--isl', '8', '--osl', '16', '--export-outputs-json', '--artifact-dir', dir], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);

  const doc = JSON.parse(readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, { avg: number; count?: number; min?: number }>;
  assert.equal(doc['reasoning_token_count']!.avg, 3);
  assert.equal(doc['reasoning_token_count']!.count, 6);
  assert.equal(doc['output_token_count']!.avg, 2, 'the answer alone');
  assert.equal(doc['output_sequence_length']!.avg, 5, 'OSL = answer + reasoning');
  assert.equal(doc['total_reasoning_tokens']!.avg, 18);
  assert.equal(doc['total_output_tokens']!.avg, 12);
  assert.equal(doc['total_osl']!.avg, 30);
  assert.equal(doc['usage_reasoning_tokens']!.avg, 3);
  assert.ok(doc['time_to_first_output_token']!.avg > doc['time_to_first_token']!.avg, 'the first answer token comes after the first reasoning token');

  const records = readFileSync(join(dir, 'profile_export.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { metrics: Record<string, { value: number }> });
  assert.equal(records.length, 6);
  for (const rec of records) {
    assert.equal(rec.metrics['reasoning_token_count']!.value, 3);
    assert.equal(rec.metrics['output_token_count']!.value, 2);
    assert.equal(rec.metrics['output_sequence_length']!.value, 5);
    assert.equal(rec.metrics['usage_reasoning_tokens']!.value, 3);
    assert.ok(rec.metrics['time_to_first_output_token']!.value >= rec.metrics['time_to_first_token']!.value);
  }
  assert.match(readFileSync(join(dir, 'profile_export_aiperf.csv'), 'utf8'), /\nReasoning Token Count \(tokens\),3\.00,/);

  // outputs.json (AIPerf's schema 1.1): the generated text, reasoning then answer, per request.
  const outputsText = readFileSync(join(dir, 'outputs.json'), 'utf8');
  assert.match(outputsText, /"request_start_ns": \d{19},/, 'nanosecond epochs written as exact integers');
  const outputs = JSON.parse(outputsText) as { schema_version: string; data: { session_num: number; benchmark_phase: string; response_text: string; metrics: Record<string, number> }[]; warmup: unknown[] };
  assert.equal(outputs.schema_version, '1.1');
  assert.deepEqual(outputs.warmup, []);
  assert.deepEqual(outputs.data.map((d) => d.session_num), [0, 1, 2, 3, 4, 5]);
  for (const d of outputs.data) {
    assert.equal(d.benchmark_phase, 'profiling');
    assert.equal(d.response_text, `${REASONING.join('')}${ANSWER.join('')}`);
    assert.equal(d.metrics['output_token_count'], 2);
    assert.equal(d.metrics['output_sequence_length'], 5);
    assert.equal(d.metrics['input_sequence_length'], 8);
  }
});
