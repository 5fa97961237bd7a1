// perf/router-memory: the router's memory per open stream, as a fixed cost plus bytes per generated
// token, for tailgate with migration on (it keeps what migration needs of each stream) beside the
// same router with migration off (it keeps nothing: the floor), measured one after the other in
// one run against the same simulated fleet.
//
//   node --import tsx perf/router-memory.ts [--streams 64] [--tokens 4000] [--baseline DIR]
//
// Each router runs in a process of its own (node --expose-gc), its memory read after a full GC:
// V8 heap used plus memory outside the heap (Buffers). 64 streams run to `tokens / 4` tokens each,
// the fleet is stalled (nothing moves, nothing is freed), the router's memory is read; again at
// `tokens`. Bytes per token = the growth between the two reads / tokens relayed between them;
// fixed cost per stream = what is left of the first read over the router at rest. --baseline DIR
// adds the router of another checkout DIR (with its node_modules), e.g. the commit before a change.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { numberArg, optionalArg, textArg, textArgs } from './args.js';

const HERE = fileURLToPath(new URL('..', import.meta.url));

interface Memory {
  heapUsed: number;
  external: number;
  rss: number;
}

/** A router process: prints its URL, then answers each `mem` line on stdin with its memory after a full GC. */
async function host(checkout: string, backends: string[], migrate: boolean): Promise<void> {
  const lib = (await import(join(checkout, 'src/router/index.ts'))) as typeof import('../src/router/index.js');
  const r = await lib.startRouter({ backends, port: 0, policy: 'adaptive', migrate, ttftDeadline: 'off', stallDeadline: 'off', health: { probeIntervalMs: 1000 } });
  process.stdout.write(`${JSON.stringify({ url: r.url })}\n`);
  const gc = (globalThis as { gc?: () => void }).gc!;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line !== 'mem') break;
    for (let i = 0; i < 3; i++) gc();
    const m = process.memoryUsage();
    process.stdout.write(`${JSON.stringify({ heapUsed: m.heapUsed, external: m.external, rss: m.rss } satisfies Memory)}\n`);
  }
  await r.close();
}

/** A child that prints JSON lines; resolves with its first line. */
function child(cmd: string, argv: string[]): Promise<{ proc: ChildProcess; next(): Promise<string> }> {
  const proc = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) => {
    const w = waiters.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const next = (): Promise<string> => (lines.length > 0 ? Promise.resolve(lines.shift()!) : new Promise((r) => waiters.push(r)));
  return Promise.resolve({ proc, next });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const STREAMS = numberArg('--streams', 64);
  const TOKENS = numberArg('--tokens', 4000);
  const FIRST = Math.round(TOKENS / 4);
  const baselines = textArgs('--baseline');
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-mem-'));
  // a fast worker with room for every stream's KV: only the router's memory is in question
  const profile = join(dir, 'fast.yaml');
  writeFileSync(profile, 'name: fast\nmaxNumSeqs: 256\nmaxNumBatchedTokens: 8192\nblockSize: 16\nkvBlocks: 40000\nmaxWaiting: 512\nstepBaseMs: 2\nprefillMsPerToken: 0.001\ndecodeMsPerToken: 0.01\nfrontendOverheadMs: 0\nmaxModelLen: 16384\n');
  const fleet = await child(process.execPath, ['--import', 'tsx', join(HERE, 'src/cli/main.ts'), 'fleet', '--workers', '2', '--port', '0', '--profile', profile]);
  const workers: string[] = [];
  for (;;) {
    const l = await fleet.next();
    if (l === 'ready') break;
    if (l.startsWith('{')) workers.push((JSON.parse(l) as { url: string }).url);
  }
  const stall = async (ms: number): Promise<void> => {
    await Promise.all(workers.map((_, i) => fetch(`${workers[0]}/admin/faults`, { method: 'POST', body: `worker=${i},kind=stall,at=0s,for=${ms}ms` })));
  };

  const targets: { name: string; checkout: string; migrate: boolean }[] = [
    { name: 'tailgate, migration on', checkout: HERE, migrate: true },
    { name: 'tailgate, migration off (keeps nothing)', checkout: HERE, migrate: false },
    ...baselines.map((b) => ({ name: `tailgate, migration on (baseline ${b})`, checkout: b, migrate: true })),
  ];
  const rows: string[] = [];
  for (const t of targets) {
    const router = await child(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--host', t.checkout, '--backends', workers.join(','), '--migrate', String(t.migrate)]);
    const url = (JSON.parse(await router.next()) as { url: string }).url;
    const mem = async (): Promise<Memory> => {
      router.proc.stdin!.write('mem\n');
      return JSON.parse(await router.next()) as Memory;
    };
    await sleep(1500);
    const rest = await mem();
    const counts = new Array<number>(STREAMS).fill(0);
    const abort = new AbortController();
    const body = JSON.stringify({ model: 'Qwen/Qwen3-8B', messages: [{ role: 'user', content: 'go' }], max_tokens: TOKENS + 200, ignore_eos: true, stream: true });
    const streams = counts.map(async (_, i) => {
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: abort.signal });
      const dec = new TextDecoder();
      try {
        for await (const chunk of res.body!) counts[i]! += (dec.decode(chunk as Uint8Array, { stream: true }).match(/"content":"[^"]/g) ?? []).length;
      } catch {
        // aborted at the end
      }
    });
    const readAt = async (tokens: number): Promise<{ m: Memory; tokens: number }> => {
      while (Math.min(...counts) < tokens) await sleep(20);
      await stall(4000);
      await sleep(1000);
      const total = counts.reduce((a, b) => a + b, 0);
      const m = await mem();
      await sleep(3200);
      return { m, tokens: total };
    };
    const a = await readAt(FIRST);
    const b = await readAt(TOKENS);
    abort.abort();
    await Promise.allSettled(streams);
    router.proc.stdin!.end();
    await new Promise((r) => router.proc.once('exit', r));
    const used = (m: Memory): number => m.heapUsed + m.external;
    const perToken = (used(b.m) - used(a.m)) / (b.tokens - a.tokens);
    const fixed = (used(a.m) - used(rest) - perToken * a.tokens) / STREAMS;
    const rssPerToken = (b.m.rss - a.m.rss) / (b.tokens - a.tokens);
    rows.push(`| ${t.name} | ${perToken.toFixed(1)} | ${(fixed / 1024).toFixed(1)} | ${((used(b.m) - used(rest)) / STREAMS / 1024).toFixed(0)} | ${rssPerToken.toFixed(1)} | ${Math.round(b.tokens / STREAMS)} |`);
    process.stderr.write(`${t.name}: done\n`);
  }
  fleet.proc.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`\nperf/router-memory: ${STREAMS} streams, read at ${FIRST} and ${TOKENS} tokens each (fleet stalled at each read), heap used + external after a full GC\n\n`);
  process.stdout.write('| router | bytes / token / stream | fixed KiB / stream | KiB / stream at the last read | RSS bytes / token / stream | tokens / stream at the last read |\n|---|---:|---:|---:|---:|---:|\n');
  process.stdout.write(`${rows.join('\n')}\n`);
  process.exit(0);
}

const hostDir = optionalArg('--host');
if (hostDir !== undefined) await host(hostDir, textArg('--backends', '').split(','), optionalArg('--migrate') === 'true');
else await main();
