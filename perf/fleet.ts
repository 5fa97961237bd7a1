// How cheap is the simulated fleet? SSE messages the fleet process emits per CPU second of its own,
// at 512 and 2048 closed-loop streams (128-in/128-out, the seed's shape) over 8 workers.
// The fleet runs in this process; the client (raw sockets that only count `data: ` frames) runs in a
// child process, so process.cpuUsage() here is the fleet's CPU alone. Rows marked `tok` run the fleet
// with --tokenizer (default: the tiny BPE fixture; give a real tokenizer.json with --tokenizer PATH):
// prompt ids from the tokenizer, output pieces precomputed once, so the per-token cost should not move.
//
//   node --import tsx perf/fleet.ts [--seconds 8] [--tokenizer PATH]
import { fork, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Tokenizer } from '../src/workload/index.js';
import { numberArg, textArg } from './args.js';

interface Mark {
  messages: number;
  responses: number;
}

function client(urls: string[], streams: number): void {
  let messages = 0;
  let responses = 0;
  const body = JSON.stringify({
    model: 'Qwen/Qwen3-8B',
    messages: [{ role: 'user', content: Array.from({ length: 128 }, (_, i) => `w${i}`).join(' ') }],
    max_tokens: 128,
    stream: true,
  });
  const sockets: Socket[] = [];
  for (let i = 0; i < streams; i++) {
    const u = new URL(urls[i % urls.length]!);
    const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const request = head + body;
    const s = connect(Number(u.port), u.hostname);
    sockets.push(s);
    let carry = '';
    s.setEncoding('latin1');
    s.on('connect', () => s.write(request));
    s.on('data', (d: string) => {
      const text = carry + d;
      let at = 0;
      for (;;) {
        const k = text.indexOf('data: ', at);
        if (k < 0) break;
        // `data: [DONE]` ends a response; the next request goes out on the same connection.
        if (text.startsWith('data: [DONE]', k)) {
          responses++;
          s.write(request);
        } else messages++;
        at = k + 6;
      }
      carry = text.slice(Math.max(at, text.length - 11));
    });
    s.on('error', () => {});
  }
  process.on('message', (m) => {
    if (m === 'mark') process.send!({ messages, responses } satisfies Mark);
    if (m === 'stop') {
      for (const s of sockets) s.destroy();
      process.exit(0);
    }
  });
  process.send!('started');
}

function ask(child: ChildProcess): Promise<Mark> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as Mark));
    child.send('mark');
  });
}

/**
 * The floor: a bare net server that writes one prebuilt chunked SSE frame to every socket every
 * 16 ms (one decode step of h100-qwen3-8b), no HTTP, no engine. One write syscall per message,
 * as in the fleet (latin1, as the fleet writes ASCII frames): on loopback that syscall also
 * carries the receiver's TCP work.
 */
async function startFloor(): Promise<{ urls: string[]; close(): Promise<void> }> {
  const frame = 'data: {"id":"chatcmpl-0000000000000001","object":"chat.completion.chunk","created":1,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":" fleet"},"logprobs":null,"finish_reason":null,"token_ids":null}]}\n\n';
  const chunk = `${frame.length.toString(16)}\r\n${frame}\r\n`;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    s.setNoDelay(true);
    s.on('error', () => {});
    s.once('data', () => sockets.add(s));
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const timer = setInterval(() => {
    for (const s of sockets) s.write(chunk, 'latin1');
  }, 16);
  const port = (server.address() as { port: number }).port;
  return {
    urls: [`http://127.0.0.1:${port}`],
    close: async () => {
      clearInterval(timer);
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

async function measure(kind: 'fleet' | 'floor', streams: number, tokensPerChunk: number, seconds: number, tokenizer?: Tokenizer) {
  const { startFleet } = await import('../src/fleet/index.js');
  const target = kind === 'fleet'
    ? await startFleet({ workers: 8, port: 0, profile: 'h100-qwen3-8b', tokensPerChunk, maxWaiting: 100_000, ...(tokenizer && { tokenizer }) }).then((f) => ({ urls: f.workers.map((w) => w.url), close: () => f.close() }))
    : await startFloor();
  const child = fork(fileURLToPath(import.meta.url), ['--client', String(streams), ...target.urls], { execArgv: ['--import', 'tsx'] });
  await new Promise((r) => child.once('message', r));
  await new Promise((r) => setTimeout(r, 3000));
  const m0 = await ask(child);
  const c0 = process.cpuUsage();
  const e0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const m1 = await ask(child);
  const c = process.cpuUsage(c0);
  const elu = performance.eventLoopUtilization(e0).utilization;
  const wallS = (performance.now() - t0) / 1000;
  child.send('stop');
  await new Promise((r) => child.once('exit', r));
  await target.close();
  const cpuS = (c.user + c.system) / 1e6;
  const msgs = m1.messages - m0.messages;
  return { kind, tok: tokenizer !== undefined, streams, tokensPerChunk, msgPerS: msgs / wallS, cpuShare: cpuS / wallS, elu, msgPerCpuS: msgs / cpuS, reqPerS: (m1.responses - m0.responses) / wallS };
}

if (process.argv[2] === '--client') {
  client(process.argv.slice(4), Number(process.argv[3]));
} else {
  const seconds = numberArg('--seconds', 8);
  const { loadTokenizer } = await import('../src/workload/index.js');
  const tokenizer = await loadTokenizer(textArg('--tokenizer', fileURLToPath(new URL('../test/fixtures/tiny-bpe', import.meta.url))));
  const rows = [];
  const plan = [['floor', 512, 1, false], ['fleet', 512, 1, false], ['fleet', 512, 1, true], ['floor', 2048, 1, false], ['fleet', 2048, 1, false], ['fleet', 2048, 1, true], ['fleet', 2048, 2, false]] as const;
  for (const [kind, streams, k, tok] of plan) rows.push(await measure(kind, streams, k, seconds, tok ? tokenizer : undefined));
  const pad = (s: string, n: number) => s.padStart(n);
  console.log(`8 workers, h100-qwen3-8b, 128-in/128-out closed loop; ${seconds}s per row; CPU = this process only (node ${process.version}, ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})`);
  console.log(`${'server'.padEnd(6)} ${pad('streams', 8)} ${pad('tok/msg', 7)} ${pad('msgs/s', 8)} ${pad('req/s', 6)} ${pad('CPU', 5)} ${pad('loop', 5)} ${pad('msgs per CPU-s', 15)}`);
  for (const r of rows) {
    console.log(`${(r.tok ? 'tok' : r.kind).padEnd(6)} ${pad(String(r.streams), 8)} ${pad(String(r.tokensPerChunk), 7)} ${pad(r.msgPerS.toFixed(0), 8)} ${pad(r.reqPerS.toFixed(0), 6)} ${pad(`${(r.cpuShare * 100).toFixed(0)}%`, 5)} ${pad(`${(r.elu * 100).toFixed(0)}%`, 5)} ${pad(r.msgPerCpuS.toFixed(0), 15)}`);
  }
  console.log('floor = bare net server writing one prebuilt chunked frame per socket every 16 ms (no HTTP, no engine): the cost of the write syscall alone.');
  console.log(`tok = the fleet with --tokenizer ${tokenizer.name}`);
  for (const n of [512, 2048]) {
    const words = rows.find((r) => r.kind === 'fleet' && !r.tok && r.streams === n && r.tokensPerChunk === 1)!;
    const tok = rows.find((r) => r.tok && r.streams === n)!;
    console.log(`${n} streams: CPU per message with the tokenizer / without = ${(words.msgPerCpuS / tok.msgPerCpuS).toFixed(3)}x`);
  }
}
