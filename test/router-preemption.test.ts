// vLLM preempts requests when its KV cache is full: they go silent while the worker keeps
// streaming to the others. The router must not take that for a stall (blame, eject, cut).
// Loopback only: `tailgate fleet` and `tailgate route` as subprocesses, bounded in count and time.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { startCli } from './helpers.js';
import { readSse, words } from './sse.js';

const MODEL = 'Qwen/Qwen3-8B';
const STREAMS = 24;
const TOKENS = 600;

/**
 * A worker with a KV cache of 200 blocks of 16 (3200 tokens): 12 streams of ~600 tokens each need
 * twice that, so it preempts (vLLM's recompute) while it keeps decoding the others. Short steps
 * keep the run to a few seconds.
 */
const PROFILE = `name: small-kv
description: a KV cache the test's load overflows
maxNumSeqs: 64
maxNumBatchedTokens: 2048
blockSize: 16
kvBlocks: 200
maxWaiting: 512
stepBaseMs: 5
prefillMsPerToken: 0.02
decodeMsPerToken: 0.05
frontendOverheadMs: 1
maxModelLen: 8192
`;

async function cli(t: TestContext, args: string[]): Promise<string[]> {
  const c = await startCli(args);
  t.after(() => c.stop());
  return c.lines;
}

function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** Sends `n` streams of TOKENS tokens at once to `url`; returns how many completed whole, without an error frame. */
async function streams(url: string, n: number): Promise<number> {
  const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: TOKENS, ignore_eos: true, stream: true });
  const one = async (): Promise<boolean> => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const s = readSse(await res.text());
    return res.status === 200 && s.errors.length === 0 && s.done === 1 && s.text === words(TOKENS);
  };
  const ok = await Promise.all(Array.from({ length: n }, one));
  return ok.filter(Boolean).length;
}

test('a fleet whose KV cache the load overflows: every stream completes through tailgate route, as straight to the workers, and no worker is ejected', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-preempt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const profile = join(dir, 'small-kv.yaml');
  writeFileSync(profile, PROFILE);
  const fleetLines = await cli(t, ['fleet', '--workers', '2', '--port', '0', '--profile', profile]);
  const workers = fleetLines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url);
  assert.equal(workers.length, 2);

  // straight to the workers: half the streams on each
  const direct = await Promise.all(workers.map((w) => streams(w, STREAMS / 2)));
  assert.deepEqual(direct, [STREAMS / 2, STREAMS / 2], 'straight to the workers, every stream completes');
  let preempted = 0;
  for (const w of workers) preempted += metric(await (await fetch(`${w}/metrics`)).text(), 'vllm:num_preemptions_total');
  assert.ok(preempted > 0, 'the workers preempted streams (their KV cache was full)');

  const routeLines = await cli(t, ['route', '--port', '0', ...workers.flatMap((w) => ['--backend', w])]);
  const router = (JSON.parse(routeLines[0]!) as { url: string }).url;
  assert.equal(await streams(router, STREAMS), STREAMS, 'through the router, every stream completes');
  const m = await (await fetch(`${router}/metrics`)).text();
  assert.equal(metric(m, 'tailgate_router_worker_ejections_total'), 0, 'no healthy worker ejected');
  assert.equal(metric(m, 'tailgate_router_requests_failed_total'), 0, 'no worker blamed for a preempted stream');
});
