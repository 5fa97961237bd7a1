// `tailgate bench` against `tailgate fleet` (two simulated vLLM workers in their own process): what
// the bench measured must agree with what the fleet says it did (its vLLM metrics).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/bench/index.js';
import { runCli, startCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

async function startTestFleet(t: TestContext): Promise<string[]> {
  const fleet = await startCli(['fleet', '--workers', '2', '--port', '0', '--profile', 'small']);
  t.after(() => fleet.stop());
  return fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url);
}

/** Sums a Prometheus sample over all label sets of every worker. */
async function scrape(urls: string[], name: string): Promise<number> {
  let total = 0;
  for (const u of urls) {
    const text = await (await fetch(`${u}/metrics`)).text();
    for (const line of text.split('\n')) {
      if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-bench-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

type Block = { avg: number; p99: number; count: number };

const HISTOGRAMS = [
  'vllm:time_to_first_token_seconds_sum', 'vllm:time_to_first_token_seconds_count',
  'vllm:inter_token_latency_seconds_sum', 'vllm:inter_token_latency_seconds_count',
  'vllm:e2e_request_latency_seconds_sum', 'vllm:e2e_request_latency_seconds_count',
];

test('TTFT, ITL, latency and token counts agree with the fleet metrics; warm-up is excluded', async (t) => {
  const urls = await startTestFleet(t);
  const r = await runBench({
    url: urls,
    model: MODEL,
    streaming: true,
    concurrency: 16,
    requestCount: 48,
    warmupRequestCount: 16,
    inputTokensMean: 64,
    outputTokensMean: 16,
    randomSeed: 100,
  });
  const m = r.summary.metrics as unknown as Record<string, Block>;
  assert.equal(m['request_count']!.avg, 48);
  assert.equal(r.records.filter((x) => x.phase === 'warmup').length, 16);
  assert.equal(await scrape(urls, 'vllm:request_success_total'), 64, 'the fleet served warm-up + profiling');
  assert.equal(await scrape(urls, 'vllm:generation_tokens_total'), 64 * 16, 'client and fleet count the same tokens');
  assert.ok(r.records.every((x) => x.outcome === 'ok' && x.outputTokens.client === 16 && x.outputTokens.server === 16));

  // Timing against the fleet's own histograms, on the now-warm fleet: deltas over a second run
  // with no warm-up, so both sides average the same requests. The client sees the server's TTFT
  // plus loopback transfer and scheduling delay; on a shared 2-core box that delay follows how
  // starved this process was (its own event-loop delay).
  const before = await Promise.all(HISTOGRAMS.map((h) => scrape(urls, h)));
  const r2 = await runBench({ url: urls, model: MODEL, streaming: true, concurrency: 16, requestCount: 48, inputTokensMean: 64, outputTokensMean: 16 });
  const after = await Promise.all(HISTOGRAMS.map((h) => scrape(urls, h)));
  const d = after.map((v, i) => v - before[i]!);
  const [serverTtft, serverItl, serverE2e] = [0, 2, 4].map((i) => (1000 * d[i]!) / d[i + 1]!) as [number, number, number];
  const slack = 10 + 2 * r2.selfCheck.eventLoopDelayP99Ms;
  const all = r2.records;
  assert.equal(d[1], 48);
  const clientTtft = all.reduce((s, x) => s + (x.firstTokenMs! - x.startMs), 0) / all.length;
  assert.ok(clientTtft >= serverTtft - 1 && clientTtft <= serverTtft + slack, `TTFT client ${clientTtft} vs fleet ${serverTtft} (slack ${slack})`);
  const clientGap = all.reduce((s, x) => s + (x.chunkMs.at(-1)! - x.chunkMs[0]!), 0) / all.reduce((s, x) => s + x.chunkMs.length - 1, 0);
  assert.ok(Math.abs(clientGap - serverItl) < 2, `ITL client ${clientGap} vs fleet ${serverItl}`);
  const clientE2e = all.reduce((s, x) => s + (x.chunkMs.at(-1)! - x.startMs), 0) / all.length;
  assert.ok(clientE2e >= serverE2e - 1 && clientE2e <= serverE2e + slack, `latency client ${clientE2e} vs fleet ${serverE2e} (slack ${slack})`);

  // AIPerf's definitions over the profiling records only.
  const itl = (r2.summary.metrics as unknown as Record<string, Block>)['inter_token_latency']!.avg;
  assert.ok(Math.abs(itl - serverItl) < 3, `ITL metric ${itl} vs fleet ${serverItl}`);
  const prof = r.records.filter((x) => x.phase === 'profiling');
  const durationS = (Math.max(...prof.map((x) => x.endMs)) - Math.min(...prof.map((x) => x.startMs))) / 1000;
  assert.ok(Math.abs(m['output_token_throughput']!.avg - (48 * 16) / durationS) < 1e-6 * (48 * 16));
  // Round-robin over the two workers, named by their x-tailgate-worker header.
  const shares = Object.values(r.summary.perWorker).map((w) => w.requests);
  assert.deepEqual(shares, [24, 24]);
});

test('CLI against the fleet: seed command line (scaled), AIPerf reader fields, same inputs.json for the same seed', async (t) => {
  const urls = await startTestFleet(t);
  const dirs = [await tempDir(t), await tempDir(t)];
  for (const dir of dirs) {
    const r = await runCli([
      'bench', '--model', MODEL, '--tokenizer', 'builtin', '--url', urls[0]!, '--endpoint-type', 'chat', '--streaming',
      '--concurrency', '16', '--request-count', '32', '--warmup-request-count', '16',
      '--synthetic-input-tokens-mean', '128', '--synthetic-input-tokens-stddev', '0',
      '--output-tokens-mean', '16', '--output-tokens-stddev', '0', '--num-dataset-entries', '100',
      '--random-seed', '100', '--extra-inputs', 'temperature:0', '--artifact-dir', dir,
    ]);
    assert.equal(r.code, 0, r.stderr);
  }
  // The way existing validators parse AIPerf: two keys, two numbers.
  const doc = JSON.parse(await readFile(join(dirs[0]!, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, number>>;
  assert.ok(doc['output_token_throughput']!['avg']! > 0);
  assert.ok(doc['time_to_first_token']!['p99']! > 0);
  assert.equal(doc['request_count']!['avg'], 32);
  const lines = (await readFile(join(dirs[0]!, 'profile_export.jsonl'), 'utf8')).trim().split('\n');
  assert.equal(lines.length, 32, 'warm-up requests are not in the per-request export');
  // The same self-contained report.html as validate's, for one run.
  const html = await readFile(join(dirs[0]!, 'report.html'), 'utf8');
  for (const id of ['bench-ttft', 'bench-throughput']) assert.match(html, new RegExp(`data-chart-id="${id}"`));
  assert.equal(
    await readFile(join(dirs[0]!, 'inputs.json'), 'utf8'),
    await readFile(join(dirs[1]!, 'inputs.json'), 'utf8'),
  );
});

test('CLI against the fleet: non-streaming chat and completions both complete', async (t) => {
  const urls = await startTestFleet(t);
  for (const type of ['chat', 'completions']) {
    const dir = await tempDir(t);
    const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', urls[1]!, '--endpoint-type', type, '--concurrency', '4', '--request-count', '8', '--isl', '32', '--osl', '8', '--artifact-dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, number>>;
    assert.equal(doc['output_sequence_length']!['avg'], 8, type);
    assert.equal(doc['error_request_count']?.['avg'] ?? 0, 0);
  }
});
