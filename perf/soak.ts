// perf/soak: does the router stay flat over a long run with faults? A `tailgate fleet` and a
// `tailgate route` (adaptive, migration on) run as their own processes; this process keeps
// --streams chat streams open through the router for --minutes, with a worker fault every 30 s
// (stall, slow, error, reset, refuse in turn, each on the next worker), and samples the router's
// RSS and open descriptors (/proc) and its in-flight and queue gauges (/metrics). After the load
// stops, every gauge must return to 0; RSS and descriptors must not climb over the soak's second
// half. Client outcomes are counted: a stream either completes or ends with an error frame / error
// status; a cut without either is "silent" and must stay at 0.
//
//   node --import tsx perf/soak.ts [--minutes 10] [--workers 4] [--streams 64] [--sample-s 15]
//
// Linux only (reads /proc). Exit 1 when a check fails.
import { readdirSync, readFileSync } from 'node:fs';
import { startCli } from '../test/helpers.js';
import { numberArg } from './args.js';

const MINUTES = numberArg('--minutes', 10);
const WORKERS = numberArg('--workers', 4);
const STREAMS = numberArg('--streams', 64);
const SAMPLE_S = numberArg('--sample-s', 15);
const FAULTS = ['kind=stall,for=6s', 'kind=slow,factor=10,for=10s', 'kind=error,rate=0.5,for=10s', 'kind=reset,for=5s', 'kind=refuse,for=5s'];

/** The JSON lines a `tailgate` process printed before `ready` (a worker's or the router's address). */
const jsonLines = (lines: string[]): Array<Record<string, unknown>> => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

const outcomes = { complete: 0, errorFrame: 0, errorStatus: 0, silent: 0 };

/** One chat stream through the router, read to its end and classified. */
async function stream(url: string, model: string, maxTokens: number, signal: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content: 'soak '.repeat(64) }] }),
      signal,
    });
  } catch {
    if (!signal.aborted) outcomes.silent++;
    return;
  }
  if (res.status !== 200) {
    outcomes.errorStatus++;
    await res.arrayBuffer().catch(() => undefined);
    return;
  }
  let text = '';
  try {
    for await (const chunk of res.body!) text += Buffer.from(chunk as Uint8Array).toString('latin1');
  } catch {
    if (signal.aborted) return;
  }
  if (text.includes('"error"')) outcomes.errorFrame++;
  else if (text.trimEnd().endsWith('data: [DONE]')) outcomes.complete++;
  else if (!signal.aborted) outcomes.silent++;
}

interface Sample {
  s: number;
  rssMb: number;
  fds: number;
  inflight: number;
  queue: number;
}

async function sample(url: string, pid: number, t0: number): Promise<Sample> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const sum = (name: string): number =>
    metrics.split('\n').filter((l) => l.startsWith(name)).reduce((acc, l) => acc + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    s: Math.round((performance.now() - t0) / 1000),
    rssMb: rssKb / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    inflight: sum('tailgate_router_worker_inflight'),
    queue: sum('tailgate_router_queue_length'),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const fleet = await startCli(['fleet', '--workers', String(WORKERS), '--port', '0', '--profile', 'small']);
  const workers = jsonLines(fleet.lines).map((l) => String(l['url']));
  const router = await startCli(['route', '--port', '0', '--policy', 'adaptive', ...workers.flatMap((w) => ['--backend', w])]);
  const url = String(jsonLines(router.lines)[0]!['url']);
  const pid = router.child.pid!;
  const model = ((await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;
  const t0 = performance.now();
  const endAt = t0 + MINUTES * 60_000;
  const stop = new AbortController();
  let seq = 0;
  const loops = Array.from({ length: STREAMS }, async () => {
    while (performance.now() < endAt) await stream(url, model, 16 + ((seq++ * 37) % 240), stop.signal);
  });
  const faultTimer = setInterval(() => {
    const n = Math.floor((performance.now() - t0) / 30_000);
    const fault = `worker=${n % WORKERS},${FAULTS[n % FAULTS.length]!}`;
    fetch(`${workers[0]}/admin/faults`, { method: 'POST', body: fault }).catch(() => undefined);
  }, 30_000);
  const samples: Sample[] = [];
  while (performance.now() < endAt) {
    await sleep(SAMPLE_S * 1000);
    const s = await sample(url, pid, t0);
    samples.push(s);
    console.log(`${String(s.s).padStart(5)} s  rss ${s.rssMb.toFixed(1).padStart(6)} MB  fds ${String(s.fds).padStart(4)}  in-flight ${String(s.inflight).padStart(4)}  queued ${s.queue}  ${JSON.stringify(outcomes)}`);
  }
  clearInterval(faultTimer);
  await Promise.race([Promise.all(loops), sleep(120_000)]);
  stop.abort();
  await sleep(2000);
  const rest = await sample(url, pid, t0);
  await router.stop();
  await fleet.stop();

  const half = samples.slice(Math.floor(samples.length / 2));
  const first = half[0]!;
  const peak = (k: 'rssMb' | 'fds'): number => Math.max(...half.map((s) => s[k]));
  const checks: Array<[string, boolean, string]> = [
    ['RSS flat over the second half', peak('rssMb') <= first.rssMb * 1.15 + 8, `${first.rssMb.toFixed(1)} MB at ${first.s} s, peak ${peak('rssMb').toFixed(1)} MB, at rest ${rest.rssMb.toFixed(1)} MB`],
    ['descriptors flat over the second half', peak('fds') <= first.fds + STREAMS / 4 + 8, `${first.fds} at ${first.s} s, peak ${peak('fds')}, at rest ${rest.fds}`],
    ['gauges at 0 after the load', rest.inflight === 0 && rest.queue === 0, `in-flight ${rest.inflight}, queued ${rest.queue}`],
    ['no stream cut silently', outcomes.silent === 0, JSON.stringify(outcomes)],
  ];
  console.log(`\nsoak: ${MINUTES} min, ${WORKERS} workers, ${STREAMS} streams, a fault every 30 s`);
  for (const [what, ok, figures] of checks) console.log(`${ok ? 'PASS' : 'FAIL'}  ${what.padEnd(38)} ${figures}`);
  process.exitCode = checks.every((c) => c[1]) ? 0 : 1;
}

await main();
