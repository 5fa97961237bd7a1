// A multi-turn Mooncake trace through `tailgate route --session-affinity`: bench's X-Correlation-ID
// keeps every turn of a session on one worker, and every request is ok.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { until } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-sessions-route-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const metric = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);

test('bench: a multi-turn trace with session headers runs clean through tailgate route --session-affinity, each session on one worker', async (t) => {
  const fleet = await startFleet({ workers: 3, port: 0, profile: 'small' });
  t.after(() => fleet.close());
  const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy: 'adaptive', seed: 5, sessions: {} });
  t.after(() => router.close());
  await until('workers healthy', () => router.workers().every((w) => w.healthy));
  const dir = await tempDir(t);
  const trace = join(dir, 'sessions.jsonl');
  // Six sessions of three turns, rows interleaved as a real trace interleaves them.
  const rows: string[] = [];
  for (let k = 0; k < 3; k++) {
    for (let s = 0; s < 6; s++) rows.push(JSON.stringify({ session_id: `s${s}`, ...(k > 0 && { delay: 10 }), input_length: 24 + 4 * s, output_length: 6 }));
  }
  await writeFile(trace, rows.join('\n'));

  const r = await runBench({ url: router.url, model: MODEL, streaming: true, inputFile: trace, concurrency: 6, conversationNum: 6, blockTokens: 8 });
  assert.equal(r.records.length, 18);
  assert.ok(r.records.every((x) => x.outcome === 'ok'), 'every request ok');
  const workersOf = new Map<string, Set<string | null>>();
  for (const x of r.records) workersOf.set(x.conversationId!, (workersOf.get(x.conversationId!) ?? new Set()).add(x.worker));
  assert.equal(workersOf.size, 6);
  for (const [conv, ws] of workersOf) {
    assert.equal(ws.size, 1, `${conv}: every turn on one worker (${[...ws].join(', ')})`);
    assert.ok(fleet.workers.some((w) => ws.has(w.id)), `${conv}: the worker is one of the fleet's`);
  }
  assert.ok(new Set(r.records.map((x) => x.worker)).size >= 2, 'the sessions spread over the fleet (without affinity their turns move between workers)');
  const text = await router.metrics();
  assert.equal(metric(text, 'tailgate_router_sessions'), 6, 'the router saw six sessions, one per X-Correlation-ID');
  assert.equal(metric(text, 'tailgate_router_session_moves_total'), 0);
});
