// AIPerf's `--cache-bust`: a marker "[rid:<12 hex of sha256(benchmark:pass:lane:trace)>]" per run of a
// conversation (timing/strategies/cache_bust.py), put where AIPerf's worker puts it: a prefix target
// before the text with a blank line, a suffix target after it; system_* on the system message (else
// the first user message), first_turn_* on the first user message. The synthetic first turn gives the
// marker its room, so the length sent is the one asked for. Checked on what reached the fleet.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { applyCacheBust, cacheBustMarker, cacheBustMarkerTokens, runBench } from '../src/bench/index.js';
import { defaultTokenizer } from '../src/workload/index.js';
import { startRecordingProxy, type ProxiedRequest } from './doubles/recording-proxy.js';
import { runCli } from './helpers.js';

type Message = { role: string; content: string };
const RID = /\[rid:[0-9a-f]{12}\]/;

async function fleetBehindProxy(t: TestContext): Promise<{ url: string; requests: ProxiedRequest[] }> {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const proxy = await startRecordingProxy(fleet.workers[0]!.url);
  t.after(() => proxy.close());
  return proxy;
}

test('the marker is AIPerf\'s: 12 hex of sha256("benchmark:pass:lane:trace"), a blank line after a prefix, before a suffix', () => {
  const hex = createHash('sha256').update('bench-1:2:0:trace-7').digest('hex').slice(0, 12);
  assert.equal(cacheBustMarker('bench-1', 2, 0, 'trace-7', 'first_turn_prefix'), `[rid:${hex}]\n\n`);
  assert.equal(cacheBustMarker('bench-1', 2, 0, 'trace-7', 'system_suffix'), `\n\n[rid:${hex}]`);
  assert.equal(cacheBustMarker('bench-1', 2, 0, 'trace-7', 'none'), null);
  assert.notEqual(cacheBustMarker('bench-1', 3, 0, 'trace-7', 'system_prefix'), cacheBustMarker('bench-1', 2, 0, 'trace-7', 'system_prefix'), 'each re-run of an entry gets its own');
  const msgs = [{ role: 'system' as const, content: 'sys' }, { role: 'user' as const, content: 'hi' }];
  assert.deepEqual(applyCacheBust(msgs, 'M\n\n', 'system_prefix').map((m) => m.content), ['M\n\nsys', 'hi']);
  assert.deepEqual(applyCacheBust(msgs, '\n\nM', 'first_turn_suffix').map((m) => m.content), ['sys', 'hi\n\nM']);
  assert.deepEqual(applyCacheBust([msgs[1]!], 'M\n\n', 'system_prefix').map((m) => m.content), ['M\n\nhi'], 'no system message: the first user message');
  assert.equal(msgs[0]!.content, 'sys', 'the messages given are not changed');
  assert.equal(cacheBustMarkerTokens('first_turn_prefix', defaultTokenizer), 1, 'one word under the word rule');
});

test('tailgate bench --cache-bust first_turn_prefix: every request a marker of its own before the prompt of inputs.json, the length sent as asked', async (t) => {
  const proxy = await fleetBehindProxy(t);
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-bust-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const res = await runCli(['bench', '-m', 'm', '--url', proxy.url, '--tokenizer', 'builtin', '--streaming', '--cache-bust', 'first_turn_prefix', '--num-dataset-entries', '3', '--request-count', '9', '--concurrency', '1', '--dataset-sampling-strategy', 'sequential', '--isl', '20', '--osl', '4', '--artifact-dir', dir]);
  assert.equal(res.code, 0, res.stderr);
  const inputs = JSON.parse(await readFile(join(dir, 'inputs.json'), 'utf8')) as { data: Array<{ payloads: Array<{ messages: Message[] }> }> };
  const prompts = inputs.data.map((d) => d.payloads[0]!.messages.at(-1)!.content);
  assert.equal(proxy.requests.length, 9);
  const sent = proxy.requests.map((r) => (r.body!['messages'] as Message[]).at(-1)!.content);
  const markers = sent.map((c) => {
    const m = /^(\[rid:[0-9a-f]{12}\])\n\n/.exec(c);
    assert.ok(m, `the marker opens the first user message: ${JSON.stringify(c.slice(0, 30))}`);
    return m[1]!;
  });
  assert.equal(new Set(markers).size, 9, 'no two runs of an entry share a marker');
  // Sequential sampling: entry i mod 3; behind the marker, the prompt inputs.json lists.
  sent.forEach((c, i) => assert.equal(c.replace(/^\[rid:[0-9a-f]{12}\]\n\n/, ''), prompts[i % 3]));
  assert.ok(prompts.every((p) => p.split(' ').length === 19), 'the synthetic prompt left one token (the marker\'s cost) of the 20 asked');
  const records = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { metrics: Record<string, { value: number }> });
  assert.ok(records.every((r) => r.metrics['input_sequence_length']!.value === 20), 'the length sent, marker included, is the 20 asked');
});

test('a system_suffix marker goes on the shared system message and stays on every turn of a conversation run', async (t) => {
  const proxy = await fleetBehindProxy(t);
  const r = await runBench({ url: proxy.url, model: 'm', streaming: true, cacheBust: 'system_suffix', sharedSystemPromptLength: 6, conversationTurnMean: 2, numDatasetEntries: 2, conversationNum: 4, concurrency: 1, inputTokensMean: 8, outputTokensMean: 3 });
  assert.equal(r.summary.okCount, 8);
  const byRun = new Map<string, Message[][]>();
  for (const q of proxy.requests) {
    const msgs = q.body!['messages'] as Message[];
    assert.equal(msgs[0]!.role, 'system');
    const m = /\n\n(\[rid:[0-9a-f]{12}\])$/.exec(msgs[0]!.content);
    assert.ok(m, 'the marker ends the system message');
    assert.equal(msgs[0]!.content.replace(/\n\n\[rid:[0-9a-f]{12}\]$/, '').split(' ').length, 5, 'the shared system prompt left the marker\'s one token of the 6 asked');
    assert.ok(msgs.slice(1).every((x) => !RID.test(x.content)), 'and nowhere else');
    byRun.set(m[1]!, [...(byRun.get(m[1]!) ?? []), msgs]);
  }
  assert.equal(byRun.size, 4, 'one marker per conversation run (2 entries run twice each)');
  for (const turns of byRun.values()) assert.deepEqual(turns.map((m) => m.length), [2, 4], 'both turns of a run carry its marker');
});
