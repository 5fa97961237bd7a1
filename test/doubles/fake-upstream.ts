import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { countTokens, vocabWord } from '../../src/core/index.js';

/** How a fake worker behaves; mutable while it runs. */
export interface FakeBehaviour {
  /** Delay before the first token (ms). @default 0 */
  ttftMs?: number;
  /** Delay between tokens (ms). @default 1 */
  itlMs?: number;
  /** Stop sending (keep the connection open) after this many tokens; 0 = before the first. */
  stallAfter?: number;
  /** Destroy the connection after this many tokens. */
  resetAfter?: number;
  /** Answer every generation request with this status and an error body. */
  status?: number;
  /** `/health` answers 503. */
  unhealthy?: boolean;
}

/** A request the fake received. */
export interface FakeRequestLog {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

/** A tiny vLLM-shaped upstream for router tests (no engine, deterministic words). */
export interface FakeUpstream {
  url: string;
  id: string;
  behaviour: FakeBehaviour;
  readonly requests: FakeRequestLog[];
  /** Open generation streams right now. */
  readonly open: number;
  close(): Promise<void>;
}

/**
 * Starts a fake OpenAI-compatible worker on 127.0.0.1:0 serving `model`: `/health`, `/v1/models`,
 * chat and completions, streaming (vLLM frames, usage when asked) or not. A chat request whose last
 * message is an assistant message with `continue_final_message` continues it (its words count as prompt).
 */
export async function startFakeUpstream(model = 'fake-model', behaviour: FakeBehaviour = {}): Promise<FakeUpstream> {
  const requests: FakeRequestLog[] = [];
  const sockets = new Set<Socket>();
  let open = 0;
  let seq = 0;
  const state = { behaviour };

  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => handle(req, res, raw));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const b = state.behaviour;
    if (req.url === '/health') {
      res.writeHead(b.unhealthy ? 503 : 200).end();
      return;
    }
    if (req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'vllm', root: model, parent: null, max_model_len: 4096 }] }));
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json","type":"Bad Request","param":null,"code":400}}');
      return;
    }
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (b.status !== undefined) {
      res.writeHead(b.status, { 'content-type': 'application/json', 'x-tailgate-worker': 'spoofed' });
      res.end(JSON.stringify({ error: { message: `fake status ${b.status}`, type: 'ServiceUnavailableError', param: null, code: b.status } }));
      return;
    }
    const chat = req.url === '/v1/chat/completions';
    const messages = (body['messages'] ?? []) as { role: string; content: string }[];
    const promptText = chat ? messages.map((m) => m.content).join('\n') : String(body['prompt']);
    // a chat continuation picks up the word sequence where the text so far left it
    const startIndex = chat && body['continue_final_message'] === true ? countTokens(messages.at(-1)?.content ?? '') : 0;
    const maxTokens = typeof body['max_tokens'] === 'number' ? body['max_tokens'] : 16;
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${process.pid}${seq++}`;
    const promptTokens = countTokens(promptText);
    const words = Array.from({ length: maxTokens }, (_, i) => ` ${vocabWord(startIndex + i)}`);
    const usage = { prompt_tokens: promptTokens, total_tokens: promptTokens + maxTokens, completion_tokens: maxTokens };
    if (body['stream'] !== true) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-tailgate-worker': 'spoofed' });
      const text = words.join('');
      const choice = chat ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'length' } : { index: 0, text, finish_reason: 'length' };
      res.end(JSON.stringify({ id, object: chat ? 'chat.completion' : 'text_completion', model, choices: [choice], usage }));
      return;
    }
    open++;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tailgate-worker': 'spoofed' });
    const frame = (choice: Record<string, unknown>, extra = '') => `data: {"id":"${id}","object":"${chat ? 'chat.completion.chunk' : 'text_completion'}","created":1,"model":"${model}","choices":[${JSON.stringify(choice)}]${extra}}\n\n`;
    if (chat) res.write(frame({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }));
    let i = 0;
    let timer: NodeJS.Timeout | undefined;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      open--;
    });
    const step = () => {
      const now = state.behaviour;
      if (now.resetAfter !== undefined && i >= now.resetAfter) {
        res.socket?.destroy();
        return;
      }
      if (now.stallAfter !== undefined && i >= now.stallAfter) {
        timer = setTimeout(step, 20);
        return;
      }
      const last = i === maxTokens - 1;
      const finish = last ? 'length' : null;
      res.write(chat ? frame({ index: 0, delta: { content: words[i] }, logprobs: null, finish_reason: finish }) : frame({ index: 0, text: words[i], logprobs: null, finish_reason: finish }));
      i++;
      if (!last) {
        timer = setTimeout(step, now.itlMs ?? 1);
        return;
      }
      const so = body['stream_options'] as { include_usage?: boolean } | undefined;
      if (so?.include_usage) res.write(`data: {"id":"${id}","object":"${chat ? 'chat.completion.chunk' : 'text_completion'}","created":1,"model":"${model}","choices":[],"usage":${JSON.stringify(usage)}}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    timer = setTimeout(step, b.ttftMs ?? 0);
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    id: `127.0.0.1:${port}`,
    get behaviour() {
      return state.behaviour;
    },
    set behaviour(b: FakeBehaviour) {
      state.behaviour = b;
    },
    requests,
    get open() {
      return open;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
