import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { listenOnLoopback } from './loopback.js';

/** A request as it reached the proxy, before it went on to the real server. */
export interface ProxiedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  /** The body parsed as JSON (null when it is not JSON). */
  body: Record<string, unknown> | null;
  /**
   * When its body had fully arrived at the proxy, `performance.now()` ms. Later than the client sent
   * it by the connection set-up and the body's transfer: a test of when bench sent a request reads
   * bench's own records (`request_start_ns` in profile_export.jsonl), not this.
   */
  atMs: number;
}

/** A pass-through HTTP proxy on 127.0.0.1:0 in front of a real server (the fleet) that records what reached it. */
export interface RecordingProxy {
  url: string;
  readonly requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * Starts a proxy that records each request (body, headers, arrival time) and forwards it to `target`
 * unchanged, relaying the answer's bytes as they come (SSE streams stay streams).
 *
 * @example const proxy = await startRecordingProxy(fleet.workers[0]!.url); // bench against proxy.url
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, unknown> | null;
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        body = null;
      }
      requests.push({ path: req.url ?? '/', headers: req.headers, body, atMs: performance.now() });
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      out.end(raw);
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return { url, requests, close };
}
