import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startRouter } from '../src/router/index.js';
import { startFakeUpstream, type FakeUpstream } from './doubles/fake-upstream.js';
import { runCli, startCli, until } from './helpers.js';
import { readSse, words } from './sse.js';

const M = 'fake-model';

function body(maxTokens: number): string {
  return JSON.stringify({ model: M, messages: [{ role: 'user', content: 'count for me' }], max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } });
}

interface StreamResult {
  status: number;
  text: string;
  done: boolean;
  error: string | null;
  doneCount: number;
  aborted: boolean;
}

/** One streaming chat call; `abortAfterContent` aborts after the first content bytes arrive. */
async function stream(url: string, maxTokens: number, abortAfterContent: boolean): Promise<StreamResult> {
  const ac = new AbortController();
  const out: StreamResult = { status: 0, text: '', done: false, error: null, doneCount: 0, aborted: false };
  let raw = '';
  try {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: body(maxTokens), headers: { 'content-type': 'application/json' }, signal: ac.signal });
    out.status = res.status;
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      raw += dec.decode(value, { stream: true });
      if (abortAfterContent && raw.includes('"content":" ')) {
        out.aborted = true;
        ac.abort();
        break;
      }
    }
  } catch (e) {
    if (!out.aborted) throw e;
  }
  const read = readSse(raw);
  out.text = read.text;
  out.error = read.errors[0] ?? null;
  out.doneCount = read.done;
  out.done = read.done > 0;
  return out;
}

async function pool<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(n);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test('tailgate route: prints its URL then ready, proxies, reports /workers, drains on SIGTERM', async (t) => {
  const up = await startFakeUpstream(M, { itlMs: 2 });
  t.after(() => up.close());
  const r = await startCli(['route', '--port', '0', '--drain-delay', '0s', '--backend', up.url, '--policy', 'p2c', '--seed', '3', '--access-log']);
  t.after(() => r.stop());
  const { url } = JSON.parse(r.lines[0]!) as { url: string };
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const got = await stream(url, 5, false);
  assert.equal(got.text, words(5));
  const workers = (await (await fetch(`${url}/workers`)).json()) as { id: string; healthy: boolean; inflight: number }[];
  assert.deepEqual(workers.map((w) => [w.id, w.healthy, w.inflight]), [[up.id, true, 0]]);
  const pending = stream(url, 60, false);
  await until('the stream to be open upstream', () => up.open === 1, 10_000, 5);
  await r.stop();
  const drained = await pending;
  assert.equal(drained.text, words(60), 'SIGTERM lets the open stream finish');
  assert.equal(r.child.exitCode, 0);
  const log = r.lines.slice(2).map((l) => JSON.parse(l) as { status: number; worker: string; outcome: string });
  assert.ok(log.length >= 2 && log.every((l) => l.status === 200 && l.worker === up.id && l.outcome === 'ok'), JSON.stringify(log));
});

test('tailgate route: bad flags exit 2 with one line and no stack trace', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-route-'));
  const badFile = join(dir, 'backends.json');
  writeFileSync(badFile, '[1, 2');
  const cases: [string[], RegExp][] = [
    [['route', '--port', '0'], /no backend/],
    [['route', '--backend', 'http://127.0.0.1:1', '--policy', 'fastest'], /expected one of/],
    [['route', '--backend', 'http://127.0.0.1:1', '--ttft-deadline', 'soon'], /auto, off or a duration/],
    [['route', '--backends-file', join(dir, 'missing.txt')], /cannot read backends file/],
    [['route', '--backends-file', badFile], /not valid JSON/],
    [['route', '--backend', 'ftp://x'], /must be http/],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(args, { timeoutMs: 60_000 })));
  for (const [i, [args, msg]] of cases.entries()) {
    const r = results[i]!;
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});

test('1000 streams, a third aborted by the client, a worker killed mid-run: nothing duplicated or silently truncated, gauges to 0, no memory growth', async (t) => {
  const ups: FakeUpstream[] = await Promise.all([0, 1, 2, 3].map(() => startFakeUpstream(M, { itlMs: 10 })));
  t.after(() => Promise.all(ups.map((u) => u.close())));
  const router = await startRouter({ backends: ups.map((u) => u.url), port: 0, policy: 'adaptive', stallDeadline: 300, ttftDeadline: 300, health: { probeIntervalMs: 100 } });
  t.after(() => router.close());
  const N = 12;
  const check = (results: StreamResult[]) => {
    for (const r of results) {
      assert.equal(r.status, 200);
      if (r.aborted) continue;
      assert.ok(r.doneCount <= 1, 'at most one [DONE]');
      assert.ok(words(N).startsWith(r.text), `text is a prefix of the answer, never a repeat: ${r.text}`);
      if (r.error === null) {
        assert.equal(r.text, words(N), 'a stream without an error frame is complete');
        assert.equal(r.done, true);
      } else assert.equal(r.done, true, 'an error frame is followed by [DONE]');
    }
  };
  const settle = async () => {
    await until('every in-flight gauge back to 0', () => router.workers().every((w) => w.inflight === 0));
    assert.match(await router.metrics(), /^tailgate_router_queue_length 0$/m);
  };

  // round 1: 400 streams, worker 0 killed after 150 have started
  let started = 0;
  const killed = new Promise<void>((resolve) => {
    const iv = setInterval(() => {
      if (started >= 150) {
        clearInterval(iv);
        void ups[0]!.close().then(resolve);
      }
    }, 2);
  });
  const round1 = await pool(400, 60, (i) => {
    started++;
    return stream(router.url, N, i % 3 === 0);
  });
  await killed;
  check(round1);
  const complete1 = round1.filter((r) => !r.aborted && r.error === null).length;
  assert.ok(complete1 >= 0.9 * round1.filter((r) => !r.aborted).length, `most streams complete despite the kill: ${complete1}`);
  await settle();

  const heaps: number[] = [];
  for (const round of [2, 3, 4]) {
    const results = await pool(200, 60, (i) => stream(router.url, N, i % 3 === 0));
    check(results);
    assert.ok(results.filter((r) => !r.aborted).every((r) => r.error === null), `round ${round}: no errors without faults`);
    await settle();
    heaps.push(heapAfterGc());
  }
  const growthMb = (heaps[2]! - heaps[0]!) / 1e6;
  assert.ok(growthMb < 8, `heap grew ${growthMb.toFixed(1)} MB across rounds`);
  const w0 = router.workers().find((w) => w.id === ups[0]!.id)!;
  assert.equal(w0.healthy, false, 'the killed worker is out of rotation');
});

test('tailgate route --procs 2: one port, /metrics sums every process', async (t) => {
  const up = await startFakeUpstream(M, { itlMs: 1 });
  t.after(() => up.close());
  const r = await startCli(['route', '--port', '0', '--drain-delay', '0s', '--backend', up.url, '--procs', '2']);
  t.after(() => r.stop());
  const { url } = JSON.parse(r.lines[0]!) as { url: string };
  for (let i = 0; i < 8; i++) assert.equal((await stream(url, 3, false)).text, words(3));
  const m = await (await fetch(`${url}/metrics`)).text();
  assert.match(m, new RegExp(`^tailgate_router_requests_completed_total\\{worker="${up.id.replace(/\./g, '\\.')}"\\} 8$`, 'm'));
  assert.match(m, /^tailgate_router_worker_inflight\{worker="[^"]+"\} 0$/m);
  // process metrics merged over the processes: one series each, CPU and memory summed, lag averaged
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds']) {
    assert.equal(m.match(new RegExp(`^${name} `, 'gm'))?.length, 1, name);
  }
  await r.stop();
  assert.equal(r.child.exitCode, 0);
});
