import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { BodyScanner, type BodyFraming } from './body-scanner.js';

/** Receives one upstream response. No callback follows `onEnd`, `onError` or `Exchange.abort()`. */
export interface ExchangeHandler {
  /** The status line and headers (names lower-case; repeated ones joined, `set-cookie` a list). */
  onHead(status: number, headers: Record<string, string | string[]>, framing: BodyFraming): void;
  /**
   * Body bytes as the worker framed them (chunk headers included; the terminal chunk never):
   * `buf[start, end)` may be forwarded as they are. Those bytes are never overwritten (the
   * handler may keep a view of them), but the rest of `buf` is not the handler's.
   */
  onBody(buf: Buffer, start: number, end: number): void;
  /** The body ended as its framing says (the connection goes back to the pool). */
  onEnd(): void;
  onError(e: Error): void;
}

/** Connection settings of one worker's pool. */
export interface UpstreamPoolOptions {
  /** Open connections at most (one exchange each); more wait. @default 4096 */
  connections?: number;
  /** PEM CA bundle for https. */
  ca?: string | Buffer;
  /** @default 5000 */
  connectTimeoutMs?: number;
}

/** An upstream failure with a stable code (the router's log and retry logic read it). */
export class UpstreamError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const MAX_HEAD_BYTES = 64 * 1024;
const CRLFCRLF = Buffer.from('\r\n\r\n');
/** One read buffer for every plain connection: each read is copied out of it at once. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);
/** Smallest body arena of an exchange. */
const ARENA_BYTES = 16 * 1024;
const EMPTY = Buffer.alloc(0);

/** One keep-alive connection; `exchange` is the request it serves now (null while idle). */
interface Conn {
  socket: Socket;
  exchange: Exchange | null;
  /** Served an exchange before (a failure before any answer byte may be a stale keep-alive). */
  reused: boolean;
}

/**
 * Keep-alive HTTP/1.1 connections to one worker, written for relaying streams: a response's
 * status line and headers are parsed once, then its body bytes go to the handler as they were
 * read (plain connections read into one shared buffer, no stream objects per read), with only
 * the chunk headers looked at to find where the body ends.
 */
export class UpstreamPool {
  readonly #host: string;
  readonly #port: number;
  readonly #tls: boolean;
  readonly #opts: UpstreamPoolOptions;
  readonly #idle: Conn[] = [];
  readonly #waiting: Exchange[] = [];
  #open = 0;
  #closed = false;

  /** `origin`: `http://host:port` or `https://host:port`. */
  constructor(origin: string, opts: UpstreamPoolOptions = {}) {
    const u = new URL(origin);
    this.#tls = u.protocol === 'https:';
    this.#host = u.hostname.replace(/^\[|\]$/g, '');
    this.#port = Number(u.port || (this.#tls ? 443 : 80));
    this.#opts = opts;
  }

  /**
   * Sends `request` (a whole HTTP/1.1 request: head and body) and reports its response to
   * `handler`; `keepBody`: the exchange holds every body byte it read, for {@link Exchange.body}.
   */
  send(request: Buffer, handler: ExchangeHandler, keepBody = false): Exchange {
    const ex = new Exchange(this, request, handler, keepBody);
    this.assign(ex);
    return ex;
  }

  /** Destroys idle connections and fails queued exchanges; one in progress ends when its call cancels it. */
  close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) c.socket.destroy();
    for (const ex of this.#waiting.splice(0)) ex.fail(new UpstreamError('UPSTREAM_CLOSED', 'the router closed its connections to the worker'));
    return Promise.resolve();
  }

  /** @internal Gives `ex` a connection: an idle one, a new one, or a place in the queue. */
  assign(ex: Exchange, fresh = false): void {
    if (this.#closed) {
      ex.fail(new UpstreamError('UPSTREAM_CLOSED', 'the router closed its connections to the worker'));
      return;
    }
    if (!fresh) {
      for (let c = this.#idle.pop(); c; c = this.#idle.pop()) {
        if (!c.socket.destroyed && c.socket.writable) {
          ex.attach(c);
          return;
        }
      }
    }
    if (this.#open < (this.#opts.connections ?? 4096)) ex.attach(this.#connect());
    else this.#waiting.push(ex);
  }

  /** @internal The exchange left the queue (aborted while waiting). */
  unqueue(ex: Exchange): void {
    const i = this.#waiting.indexOf(ex);
    if (i >= 0) this.#waiting.splice(i, 1);
  }

  /** @internal An exchange finished cleanly on `c`: keep the connection for the next one. */
  release(c: Conn): void {
    c.exchange = null;
    c.reused = true;
    // an idle connection keeps reading, so a worker's close is seen
    if (c.socket.isPaused()) c.socket.resume();
    const next = this.#waiting.shift();
    if (next) next.attach(c);
    else if (this.#closed) c.socket.destroy();
    else this.#idle.push(c);
  }

  #connect(): Conn {
    this.#open++;
    const opts = this.#opts;
    let socket: Socket;
    const c: Conn = { socket: undefined as unknown as Socket, exchange: null, reused: false };
    if (this.#tls) {
      socket = tlsConnect({ host: this.#host, port: this.#port, servername: isIp(this.#host) ? '' : this.#host, ALPNProtocols: ['http/1.1'], ...(opts.ca !== undefined ? { ca: opts.ca } : {}) });
      socket.on('data', (d: Buffer) => c.exchange?.bytes(d, -1));
    } else {
      socket = netConnect({
        host: this.#host,
        port: this.#port,
        noDelay: true,
        onread: {
          buffer: READ_BUFFER,
          callback: (n: number) => {
            const ex = c.exchange;
            if (ex) ex.bytes(READ_BUFFER, n);
            else socket.destroy();
            return true;
          },
        },
      });
    }
    c.socket = socket;
    const timeoutMs = opts.connectTimeoutMs ?? 5000;
    socket.setTimeout(timeoutMs, () => socket.destroy(new UpstreamError('UPSTREAM_CONNECT_TIMEOUT', `no connection within ${timeoutMs} ms`)));
    socket.once(this.#tls ? 'secureConnect' : 'connect', () => socket.setTimeout(0));
    socket.on('error', (e) => c.exchange?.socketError(e));
    socket.on('close', () => {
      this.#open--;
      const i = this.#idle.indexOf(c);
      if (i >= 0) this.#idle.splice(i, 1);
      c.exchange?.socketClosed();
      const next = this.#waiting.shift();
      if (next) this.assign(next);
    });
    return c;
  }
}

/** One request on one connection, and the reading of its response. */
export class Exchange {
  readonly #pool: UpstreamPool;
  readonly #request: Buffer;
  readonly #handler: ExchangeHandler;
  #conn: Conn | null = null;
  #head: Buffer | null = null;
  #scanner: BodyScanner | null = null;
  readonly #keepBody: boolean;
  /**
   * Body bytes as read, appended and never overwritten (a region handed out stays valid): a read
   * costs one copy and no new object. Holds the whole body when kept; else a full arena is left
   * to whoever still holds a view of it.
   */
  #arena: Buffer = EMPTY;
  #used = 0;
  /** Where an unfinished chunk header begins in the arena (-1: none): it is scanned again with the next read. */
  #carryAt = -1;
  #gotBytes = false;
  #retried = false;
  #over = false;
  #paused = false;
  #keepAlive = true;

  constructor(pool: UpstreamPool, request: Buffer, handler: ExchangeHandler, keepBody: boolean) {
    this.#pool = pool;
    this.#request = request;
    this.#handler = handler;
    this.#keepBody = keepBody;
  }

  /** Every body byte read so far, as the worker framed it (only when sent with `keepBody`). */
  body(): Buffer | null {
    return this.#keepBody ? this.#arena.subarray(0, this.#used) : null;
  }

  /** Stops reading from the worker (backpressure from the client). */
  pause(): void {
    this.#paused = true;
    this.#conn?.socket.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#conn?.socket.resume();
  }

  /** Abandons the exchange: its connection is destroyed (a half-read response cannot be reused). */
  abort(): void {
    if (this.#over) return;
    this.#over = true;
    const c = this.#conn;
    if (c) {
      c.exchange = null;
      c.socket.destroy();
    } else this.#pool.unqueue(this);
  }

  /**
   * The body bytes forwarded so far end between two chunks and at the end of an SSE event, so a
   * reader has seen only whole events and whole chunks.
   */
  cleanCut(): boolean {
    const s = this.#scanner;
    return s !== null && s.framing === 'chunked' && (s.done || s.atChunkStart) && s.endsEvent();
  }

  /** The last payload bytes of the body so far (see {@link BodyScanner.tail}). */
  tail(): { bytes: Buffer; partial: boolean } {
    return this.#scanner ? this.#scanner.tail() : { bytes: Buffer.alloc(0), partial: false };
  }

  /** @internal */
  attach(c: Conn): void {
    if (this.#over) {
      this.#pool.release(c);
      return;
    }
    this.#conn = c;
    c.exchange = this;
    if (this.#paused) c.socket.pause();
    else if (c.socket.isPaused()) c.socket.resume();
    c.socket.write(this.#request);
  }

  /** @internal */
  fail(e: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.#handler.onError(e);
  }

  /**
   * @internal Bytes read on the connection: `read[0, n)` of the shared read buffer (copied out at
   * once), or all of a buffer of its own when `n` is -1.
   */
  bytes(read: Buffer, n: number): void {
    if (this.#over) return;
    this.#gotBytes = true;
    const len = n < 0 ? read.length : n;
    const scanner = this.#scanner;
    if (scanner === null) {
      this.#readHead(n < 0 ? read : Buffer.from(read.subarray(0, n)));
      return;
    }
    this.#scanRead(scanner, read, 0, len);
  }

  /** Appends `read[start, end)` to the arena and scans it (with an unfinished chunk header before it). */
  #scanRead(scanner: BodyScanner, read: Buffer, start: number, end: number): void {
    const at = this.#append(read, start, end);
    const carry = this.#carryAt;
    this.#carryAt = -1;
    this.#body(scanner, this.#arena, carry >= 0 ? carry : at, at);
  }

  /** Copies `read[start, end)` to the end of the arena; returns where it begins. */
  #append(read: Buffer, start: number, end: number): number {
    const len = end - start;
    if (this.#used + len > this.#arena.length) {
      // a fresh arena takes along what must stay contiguous: the whole body when kept, else an unfinished header
      const from = this.#keepBody ? 0 : this.#carryAt >= 0 ? this.#carryAt : this.#used;
      const live = this.#used - from;
      const next = Buffer.allocUnsafeSlow(Math.max(ARENA_BYTES, this.#keepBody ? 2 * (live + len) : live + len));
      this.#arena.copy(next, 0, from, this.#used);
      if (this.#carryAt >= 0) this.#carryAt -= from;
      this.#arena = next;
      this.#used = live;
    }
    const at = this.#used;
    read.copy(this.#arena, at, start, end);
    this.#used = at + len;
    return at;
  }

  #readHead(buf: Buffer): void {
    const all = this.#head ? Buffer.concat([this.#head, buf]) : buf;
    const at = all.indexOf(CRLFCRLF);
    if (at < 0) {
      if (all.length > MAX_HEAD_BYTES) this.#error(new UpstreamError('UPSTREAM_PROTOCOL', 'the worker sent a response head over 64 KiB'));
      else this.#head = all;
      return;
    }
    this.#head = null;
    const head = parseHead(all.toString('latin1', 0, at));
    if (head === null) {
      this.#error(new UpstreamError('UPSTREAM_PROTOCOL', 'the worker sent a malformed response head'));
      return;
    }
    const rest = at + 4;
    if (head.status < 200) {
      // an interim answer (100 Continue): the real one follows
      if (rest < all.length) this.#readHead(all.subarray(rest));
      return;
    }
    const framing: BodyFraming = head.chunked ? 'chunked' : head.length >= 0 ? 'length' : head.status === 204 || head.status === 304 ? 'length' : 'close';
    const scanner = new BodyScanner(framing, Math.max(0, head.length));
    this.#scanner = scanner;
    this.#keepAlive = !head.close;
    this.#handler.onHead(head.status, head.headers, framing);
    if (this.#over) return;
    if (scanner.done) {
      this.#finish(rest === all.length);
      return;
    }
    if (rest < all.length) this.#scanRead(scanner, all, rest, all.length);
  }

  /** Scans `buf[start, #used)` (bytes before `resumeAt` were scanned before) and hands the forwardable ones on. */
  #body(scanner: BodyScanner, buf: Buffer, start: number, resumeAt: number): void {
    const end = this.#used;
    const fwd = scanner.scan(buf, start, end, resumeAt);
    if (scanner.done) {
      if (fwd > start) this.#handler.onBody(buf, start, fwd);
      if (this.#over) return;
      this.#finish(scanner.bodyEnd === end && !scanner.malformed);
      return;
    }
    if (fwd < end) this.#carryAt = fwd;
    if (fwd > start) this.#handler.onBody(buf, start, fwd);
  }

  #finish(clean: boolean): void {
    this.#over = true;
    const c = this.#conn;
    this.#conn = null;
    if (c) {
      if (clean && this.#keepAlive) this.#pool.release(c);
      else {
        c.exchange = null;
        c.socket.destroy();
      }
    }
    this.#handler.onEnd();
  }

  #error(e: Error): void {
    if (this.#over) return;
    this.#over = true;
    const c = this.#conn;
    this.#conn = null;
    if (c) {
      c.exchange = null;
      c.socket.destroy();
    }
    this.#handler.onError(e);
  }

  /** @internal */
  socketError(e: Error): void {
    if (this.#retryStale()) return;
    this.#error(e);
  }

  /** @internal The connection closed under the exchange. */
  socketClosed(): void {
    if (this.#over) return;
    if (this.#retryStale()) return;
    if (this.#scanner?.closed()) {
      const c = this.#conn;
      if (c) c.exchange = null;
      this.#conn = null;
      this.#over = true;
      this.#handler.onEnd();
      return;
    }
    this.#error(new UpstreamError('UPSTREAM_CLOSED', this.#gotBytes ? 'closed the connection mid-response' : 'closed the connection'));
  }

  /** A kept-alive connection the worker had closed meanwhile: send once more on a new one. */
  #retryStale(): boolean {
    const c = this.#conn;
    if (this.#over || this.#gotBytes || this.#retried || !c || !c.reused) return false;
    this.#retried = true;
    c.exchange = null;
    this.#conn = null;
    this.#pool.assign(this, true);
    return true;
  }
}

interface Head {
  status: number;
  headers: Record<string, string | string[]>;
  chunked: boolean;
  length: number;
  close: boolean;
}

function parseHead(text: string): Head | null {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? '');
  if (!m) return null;
  const headers: Record<string, string | string[]> = {};
  let chunked = false;
  let length = -1;
  let close = m[1] === '0';
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) return null;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'transfer-encoding') chunked = /(^|,)\s*chunked\s*$/i.test(value);
    else if (name === 'content-length') {
      length = Number(value);
      if (!Number.isInteger(length) || length < 0) return null;
    } else if (name === 'connection') close = /\bclose\b/i.test(value) || (m[1] === '0' && !/keep-alive/i.test(value));
    const prev = headers[name];
    if (prev === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(prev)) prev.push(value);
    else headers[name] = `${prev}, ${value}`;
  }
  return { status: Number(m[2]), headers, chunked, length: chunked ? -1 : length, close };
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** The bytes of an HTTP/1.1 request: head (with `host` and `content-length`) and body. */
export function encodeRequest(method: string, path: string, host: string, headers: Readonly<Record<string, string>>, body: Buffer): Buffer {
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const k in headers) if (k !== 'host' && k !== 'content-length') head += `${k}: ${headers[k]}\r\n`;
  head += `content-length: ${body.length}\r\n\r\n`;
  const h = Buffer.from(head, 'latin1');
  return Buffer.concat([h, body], h.length + body.length);
}
