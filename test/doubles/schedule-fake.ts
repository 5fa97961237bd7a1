// A vLLM-shaped chat server that streams on a known schedule, for checking what a client measures
// (test/bench-fake.test.ts asserts the outcomes, perf/bench-schedule.ts prints how close the timings come).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { vocabWord } from '../../src/core/index.js';

/** A running schedule fake: what it received, and how to stop it. */
export interface ScheduleFake {
  url: string;
  requests: number;
  bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

/** How it answers: on schedule, JSON where SSE is expected, never, or every third request a 500. */
export type ScheduleFakeMode = 'ok' | 'json-instead-of-sse' | 'hang' | 'every-third-500';

/** The fake's model and its schedule (ms). */
export const SCHEDULE = { model: 'Qwen/Qwen3-8B', ttftMs: 80, itlMs: 15 } as const;

/**
 * A vLLM-like chat server on 127.0.0.1:0: role chunk at once, first token after SCHEDULE.ttftMs, then one
 * token every SCHEDULE.itlMs (scheduled against the request's own start), so what a client measures can
 * be checked against what it did.
 */
export async function startScheduleFake(mode: ScheduleFakeMode = 'ok'): Promise<ScheduleFake> {
  const { model: MODEL, ttftMs: TTFT_MS, itlMs: ITL_MS } = SCHEDULE;
  const sockets = new Set<Socket>();
  const fake: ScheduleFake = {
    url: '',
    requests: 0,
    bodies: [],
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const n = ++fake.requests;
      const body = JSON.parse(raw) as Record<string, unknown>;
      fake.bodies.push(body);
      if (body['model'] !== MODEL) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `The model \`${String(body['model'])}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 } }));
        return;
      }
      if (mode === 'hang') return;
      if (mode === 'every-third-500' && n % 3 === 0) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'engine hiccup', type: 'InternalServerError', param: null, code: 500 } }));
        return;
      }
      if (mode === 'json-instead-of-sse') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}');
        return;
      }
      const maxTokens = Number(body['max_completion_tokens']);
      const prompt = (body['messages'] as Array<{ content: string }>)[0]!.content;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tailgate-worker': `fake:${n % 2}` });
      const frame = (delta: Record<string, unknown>, finish: string | null): string =>
        `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
      res.write(frame({ role: 'assistant', content: '' }, null));
      const t0 = performance.now();
      let i = 0;
      const tick = (): void => {
        if (res.destroyed) return;
        const last = i === maxTokens - 1;
        res.write(frame({ content: ` ${vocabWord(i)}` }, last ? 'length' : null));
        i++;
        if (last) {
          res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [], usage: { prompt_tokens: prompt.split(' ').length, total_tokens: prompt.split(' ').length + maxTokens, completion_tokens: maxTokens } })}\n\n`);
          res.end('data: [DONE]\n\n');
          return;
        }
        // Schedule against the request's own start so timer drift does not accumulate.
        setTimeout(tick, Math.max(0, t0 + TTFT_MS + i * ITL_MS - performance.now()));
      };
      setTimeout(tick, TTFT_MS);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
