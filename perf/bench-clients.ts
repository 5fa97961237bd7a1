// The pieces perf/bench.ts and perf/bench-cpu-profile.ts share: the fleet they measure against, the raw clients' request and the raw-socket floor.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BenchOptions } from '../src/bench/index.js';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

/** The model both scripts' requests name. */
export const MODEL = 'Qwen/Qwen3-8B';

/** The seed's workload as one GPU's share, both scripts' defaults: 256 streams (its 2048 over 8 workers), 128 output tokens. */
export const SEED_SHARE = { streams: 256, osl: 128 } as const;

/** bench's options for `total` requests of 128 prompt and `osl` output tokens over `streams` streams. */
export function benchOptions(urls: string[], streams: number, total: number, osl: number, extra: Partial<BenchOptions> = {}): BenchOptions {
  return { url: urls, model: MODEL, streaming: true, concurrency: streams, requestCount: total, inputTokensMean: 128, outputTokensMean: osl, randomSeed: 100, ...extra };
}

/** SSE messages of one streamed answer of `osl` tokens, as both scripts count them: its content chunks, the role and usage chunks and [DONE]. */
export function messagesOf(osl: number): number {
  return osl + 3;
}

/** The raw clients' request body: a 128-word prompt, streamed with usage, `osl` tokens out. */
export function streamBody(osl: number): string {
  const prompt = Array.from({ length: 128 }, (_, i) => `w${i}`).join(' ');
  return JSON.stringify({ messages: [{ role: 'user', content: prompt }], model: MODEL, stream: true, stream_options: { include_usage: true }, max_tokens: osl });
}

/**
 * One raw socket per stream, Node's `onread` into one shared buffer: `perSocket(buf)` makes each
 * socket's read handler, which returns true on the read that ends a response; the socket then sends
 * the next request, or closes once `total` were sent. Resolves when `total` responses ended.
 */
function rawSocketClient(urls: string[], streams: number, total: number, payload: string, perSocket: (buf: Buffer) => (n: number) => boolean): Promise<void> {
  const buf = Buffer.allocUnsafe(256 * 1024);
  let issued = 0;
  let done = 0;
  return new Promise((resolve) => {
    const open = (url: string): void => {
      const u = new URL(url);
      const req = Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
      const read = perSocket(buf);
      const socket = connect({
        host: u.hostname,
        port: Number(u.port),
        onread: {
          buffer: buf,
          callback: (n) => {
            if (read(n)) {
              if (++done === total) resolve();
              if (issued < total) {
                issued++;
                socket.write(req);
              } else socket.destroy();
            }
            return true;
          },
        },
      });
      socket.setNoDelay(true);
      issued++;
      socket.write(req);
    };
    for (let i = 0; i < Math.min(streams, total); i++) open(urls[i % urls.length]!);
  });
}

/** `buf[0, n)` ends with "0\r\n\r\n", the end of a chunked body (the fleet sends it in the read that ends the response). */
function endsBody(buf: Buffer, n: number): boolean {
  return n >= 5 && buf[n - 5] === 48 && buf[n - 4] === 13 && buf[n - 3] === 10 && buf[n - 2] === 13 && buf[n - 1] === 10;
}

/**
 * The floor's read handler for one socket reading into `buf`: adds to `counter.messages` each "\n\n"
 * that ends an SSE message in the read `buf[0, n)` (one split across two reads too); true on the read
 * that ends a response.
 */
export function floorReader(buf: Buffer, counter: { messages: number }): (n: number) => boolean {
  let lastLf = false;
  return (n) => {
    if (lastLf && buf[0] === 10) counter.messages++;
    for (let i = 0; i + 1 < n; i++) if (buf[i] === 10 && buf[i + 1] === 10) counter.messages++;
    lastLf = buf[n - 1] === 10;
    return endsBody(buf, n);
  };
}

/** The floor: one raw socket per stream, Node's `onread` into one buffer, counting "\n\n" and the end of each chunked body. */
export async function floorClient(urls: string[], streams: number, total: number, payload: string): Promise<{ messages: number }> {
  const counter = { messages: 0 };
  await rawSocketClient(urls, streams, total, payload, (buf) => floorReader(buf, counter));
  return counter;
}

/** `items` rotated left by `round` (modulo their number): interleaved rounds that start each round one further on, so no client always runs right after the same one. */
export function rotated<T>(items: readonly T[], round: number): T[] {
  return items.map((_, i) => items[(i + round) % items.length]!);
}

/** `content":"` as bytes: the key the stamping floor looks for after a quote. */
const CONTENT_KEY = Buffer.from('content":"');

function isContentKey(b: Buffer, at: number): boolean {
  for (let k = 0; k < CONTENT_KEY.length; k++) if (b[at + k] !== CONTENT_KEY[k]) return false;
  return true;
}

/**
 * The floor plus the least any client that measures TTFT and ITL must do per message: one clock read
 * per socket read, a stamp kept for every content message, the content's bytes kept, and at each
 * answer's end its stamps and text kept until the run ends (as every record is). No HTTP or JSON
 * parsing beyond finding `"content":"` and its closing quote; no summary.
 */
export async function stampingFloorClient(urls: string[], streams: number, total: number, payload: string): Promise<{ messages: number; answers: { stamps: number[]; text: string }[] }> {
  const answers: { stamps: number[]; text: string }[] = [];
  let messages = 0;
  await rawSocketClient(urls, streams, total, payload, (buf) => {
    let lastLf = false;
    let stamps: number[] = [];
    let content = Buffer.allocUnsafe(1024);
    let len = 0;
    return (n) => {
      const at = performance.now();
      if (lastLf && buf[0] === 10) messages++;
      for (let i = 0; i + 1 < n; i++) {
        const c = buf[i];
        if (c === 10 && buf[i + 1] === 10) messages++;
        else if (c === 34 && buf[i + 1] === 99 && i + 10 < n && isContentKey(buf, i + 1)) {
          // The string's body up to its closing quote (escaped quotes skipped).
          let j = i + 11;
          for (; j < n && buf[j] !== 34; j++) if (buf[j] === 92) j++;
          if (j > i + 11) {
            stamps.push(at);
            if (len + j - i > content.length) content = Buffer.concat([content.subarray(0, len)], 2 * (len + j - i));
            len += buf.copy(content, len, i + 11, j);
          }
          i = j;
        }
      }
      lastLf = buf[n - 1] === 10;
      if (!endsBody(buf, n)) return false;
      answers.push({ stamps, text: content.toString('utf8', 0, len) });
      stamps = [];
      len = 0;
      return true;
    };
  });
  return { messages, answers };
}

/** A `tailgate fleet` of `workers` 'small' workers in a child process; resolves with its workers' URLs once it is ready. */
export async function startFleet(workers: number): Promise<{ urls: string[]; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'fleet', '--workers', String(workers), '--port', '0', '--profile', 'small', '--max-waiting', '4096'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    // From the repository, wherever the caller runs (`--import tsx` resolves from the working directory).
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  });
  const urls: string[] = [];
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`fleet exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('{')) urls.push((JSON.parse(line) as { url: string }).url);
      if (line === 'ready') resolve();
    });
  });
  return { urls, child };
}
