import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { countTokens, promptTokenIds, vocabWord } from '../../src/core/index.js';

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
  /** Tokens per content message (vLLM's `--stream-interval`, speculative decoding). @default 1 */
  tokensPerChunk?: number;
  /** The answer ends by itself (finish_reason `stop`) before its word with this index (counted over the whole answer, a continuation included). */
  stopAt?: number;
  /** `false`: `/tokenize` answers 404, as a server without it. @default true */
  tokenize?: boolean;
  /** `/tokenize` answers after this long (ms). @default 0 */
  tokenizeDelayMs?: number;
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
  /** The `/tokenize` requests it received. */
  readonly tokenizes: FakeRequestLog[];
  /** `/tokenize` requests neither answered nor closed by their client right now. */
  readonly tokenizing: number;
  /** Open generation streams right now. */
  readonly open: number;
  close(): Promise<void>;
}

/**
 * Starts a fake OpenAI-compatible worker on 127.0.0.1:0 serving `model`: `/health`, `/v1/models`,
 * chat and completions, streaming (vLLM frames, usage when asked, on every message too with
 * `continuous_usage_stats`) or not, and `/tokenize` (one token per word). A chat request whose last
 * message is an assistant message with `continue_final_message` continues it (its words count as prompt).
 */
export async function startFakeUpstream(model = 'fake-model', behaviour: FakeBehaviour = {}): Promise<FakeUpstream> {
  const requests: FakeRequestLog[] = [];
  const tokenizes: FakeRequestLog[] = [];
  const sockets = new Set<Socket>();
  let open = 0;
  let tokenizing = 0;
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
    if (req.url === '/tokenize') {
      tokenizes.push({ path: req.url, headers: req.headers, body });
      if (b.tokenize === false) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
        return;
      }
      const ids = Array.from(promptTokenIds(String(body['prompt'])));
      tokenizing++;
      const answer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count: ids.length, max_model_len: 4096, tokens: ids, token_strs: null })), b.tokenizeDelayMs ?? 0);
      res.on('close', () => {
        clearTimeout(answer);
        tokenizing--;
      });
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
    const length = Math.max(0, Math.min(maxTokens, (b.stopAt ?? Number.POSITIVE_INFINITY) - startIndex));
    const reason = length < maxTokens ? 'stop' : 'length';
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${process.pid}${seq++}`;
    const promptTokens = countTokens(promptText);
    const words = Array.from({ length }, (_, i) => ` ${vocabWord(startIndex + i)}`);
    const usageOf = (completion: number) => ({ prompt_tokens: promptTokens, total_tokens: promptTokens + completion, completion_tokens: completion });
    const usage = usageOf(length);
    if (body['stream'] !== true) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-tailgate-worker': 'spoofed' });
      const text = words.join('');
      const choice = chat ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: reason } : { index: 0, text, finish_reason: reason };
      res.end(JSON.stringify({ id, object: chat ? 'chat.completion' : 'text_completion', model, choices: [choice], usage }));
      return;
    }
    open++;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tailgate-worker': 'spoofed' });
    const so = body['stream_options'] as { include_usage?: boolean; continuous_usage_stats?: boolean } | undefined;
    // vLLM's running usage on every message: the tokens generated so far
    const running = (sent: number) => (so?.include_usage === true && so.continuous_usage_stats === true ? `,"usage":${JSON.stringify(usageOf(sent))}` : '');
    const frame = (choice: Record<string, unknown>, extra = '') => `data: {"id":"${id}","object":"${chat ? 'chat.completion.chunk' : 'text_completion'}","created":1,"model":"${model}","choices":[${JSON.stringify(choice)}]${extra}}\n\n`;
    if (chat) res.write(frame({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }, running(0)));
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
      // a message holds up to tokensPerChunk tokens, and never passes the stall
      const to = Math.min(length, i + (now.tokensPerChunk ?? 1), now.stallAfter ?? Number.POSITIVE_INFINITY);
      const text = words.slice(i, to).join('');
      const last = to === length;
      const finish = last ? reason : null;
      res.write(chat ? frame({ index: 0, delta: { content: text }, logprobs: null, finish_reason: finish }, running(to)) : frame({ index: 0, text, logprobs: null, finish_reason: finish }, running(to)));
      i = to;
      if (!last) {
        timer = setTimeout(step, now.itlMs ?? 1);
        return;
      }
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
    tokenizes,
    get tokenizing() {
      return tokenizing;
    },
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
