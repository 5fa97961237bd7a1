import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody } from '../openai/index.js';

/** Headers that describe one hop and must not be forwarded. */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'trailers',
  'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect',
]);

/** The headers a `Connection` header names (one hop's too, RFC 9110 7.6.1), lower-case; undefined when none. */
function connectionNamed(v: string | string[] | undefined): Set<string> | undefined {
  // the usual values name nothing more
  if (v === undefined || v === 'keep-alive' || v === 'close') return undefined;
  const names = (Array.isArray(v) ? v.join(',') : v).split(',').map((n) => n.trim().toLowerCase());
  return names.some((n) => n !== '' && !HOP_BY_HOP.has(n)) ? new Set(names) : undefined;
}

/** Sends a JSON body (compact) with the given status. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Sends an OpenAI-style error body. */
export function sendError(res: ServerResponse, status: number, message: string, headers: OutgoingHttpHeaders = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, status, errorBody(status, message), headers);
}

/**
 * The request body; `too-large` once it passes `limitBytes` (the rest is not buffered), `timeout`
 * when no byte arrived for `idleMs` (nginx's client_body_timeout: between two reads, not in total).
 */
export function readBody(req: IncomingMessage, limitBytes: number, idleMs = 0): Promise<Buffer | 'too-large' | 'aborted' | 'timeout'> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (declared > limitBytes) {
      req.resume();
      resolve('too-large');
      return;
    }
    const parts: Buffer[] = [];
    let total = 0;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (r: Buffer | 'too-large' | 'aborted' | 'timeout') => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(r);
    };
    if (idleMs > 0 && !req.complete) {
      timer = setTimeout(() => settle('timeout'), idleMs);
      timer.unref();
    }
    req.on('data', (c: Buffer) => {
      if (settled) return;
      timer?.refresh();
      total += c.length;
      if (total > limitBytes) {
        settle('too-large');
        return;
      }
      parts.push(c);
    });
    req.on('end', () => settle(parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    req.on('error', () => settle('aborted'));
    req.on('close', () => settle('aborted'));
  });
}

/** How long a rejected upload may keep its connection after the answer (nginx's lingering_time is 30 s). */
const LINGER_MS = 10_000;

/**
 * Answers 413 at once and closes the connection the way nginx's lingering close does: the rest of
 * the upload is read and discarded (up to 10 s) before the socket closes, so a client still
 * sending reads the answer rather than a reset (closing with unread bytes makes the kernel send RST).
 */
export function rejectTooLarge(req: IncomingMessage, res: ServerResponse, message: string): void {
  // node:http closes a `Connection: close` socket with destroySoon() once the answer is written
  const socket = req.socket as Socket & { destroySoon?: () => void };
  socket.destroySoon = () => {
    socket.end();
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  };
  req.resume();
  sendError(res, 413, message, { connection: 'close' });
}

/**
 * Client request headers as they go upstream: hop-by-hop dropped, body length set. `Authorization`
 * is what the door left: the worker's key on an authenticated request, else the client's own.
 */
export function upstreamHeaders(h: IncomingHttpHeaders, bodyBytes: number): Record<string, string> {
  const out: Record<string, string> = {};
  const named = connectionNamed(h['connection']);
  for (const k in h) {
    if (HOP_BY_HOP.has(k) || named?.has(k)) continue;
    const v = h[k];
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  out['content-length'] = String(bodyBytes);
  if (!out['content-type']) out['content-type'] = 'application/json';
  return out;
}

/** Upstream response headers as they go to the client: hop-by-hop dropped, our worker header set. */
export function clientHeaders(h: Record<string, string | string[] | undefined>, workerId: string, keepLength: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const named = connectionNamed(h['connection']);
  for (const k in h) {
    if (k === 'x-tailgate-worker' || named?.has(k)) continue;
    if (HOP_BY_HOP.has(k) && !(keepLength && k === 'content-length')) continue;
    const v = h[k];
    if (v !== undefined) out[k] = v;
  }
  out['x-tailgate-worker'] = workerId;
  return out;
}
