import { BodyScanner, HeadReader, KeepAlivePool, WireError, bodyFraming, type BodyFraming, type Connection, type ConnectionReader, type ConnectionWaiter } from '../wire/index.js';
import { LAST_CHUNK, socketFd, writeDirect } from './direct-write.js';

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
  /**
   * With `keepBody`: every body byte read, as framed, in order and each once, handed on when its
   * arena is full or when {@link Exchange.flushKept} asks (a view, valid only during the call).
   */
  onKept?(framed: Buffer): void;
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

/** Smallest body arena of an exchange. */
const ARENA_BYTES = 16 * 1024;
const EMPTY = Buffer.alloc(0);
/** Arenas up to a quarter of this are cut from a shared slab. */
const SLAB_BYTES = 128 * 1024;
let slab = EMPTY;
let slabUsed = 0;

/**
 * A buffer of `bytes` for an arena: cut from a shared slab, as Node's Buffer pool does for small
 * buffers, so a response costs no allocation of its own (one per slab, ~5% of the router's work per
 * request when each was allocated). A slab's memory is freed once no arena in it is referenced.
 */
function newArena(bytes: number): Buffer {
  if (bytes > SLAB_BYTES / 4) return Buffer.allocUnsafeSlow(bytes);
  if (slabUsed + bytes > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabUsed = 0;
  }
  const b = slab.subarray(slabUsed, slabUsed + bytes);
  slabUsed += bytes;
  return b;
}

/** Reads up to this long get a cached view (see {@link leadingBytes}); longer ones carry many messages. */
const MAX_VIEW_BYTES = 4096;
let viewsOf: Buffer | null = null;
const views: (Buffer | undefined)[] = [];

/**
 * `read[0, n)` as a buffer of its own length, one view per length made once: a read copied out of
 * the shared read buffer with `set()` then leaves no garbage, where `copy()` of a part of it makes
 * a view per call (~96 bytes a read, most of what the relay allocates per read).
 */
function leadingBytes(read: Buffer, n: number): Buffer {
  if (n > MAX_VIEW_BYTES) return read.subarray(0, n);
  if (read !== viewsOf) {
    viewsOf = read;
    views.length = 0;
  }
  return (views[n] ??= read.subarray(0, n));
}

/**
 * Keep-alive HTTP/1.1 connections to one worker (the wire layer's pool), written for relaying
 * streams: a response's status line and headers are parsed once, then its body bytes go to the
 * handler as they were read, with only the chunk headers looked at to find where the body ends.
 */
export class UpstreamPool {
  readonly #pool: KeepAlivePool;

  /** `origin`: `http://host:port` or `https://host:port`. */
  constructor(origin: string, opts: UpstreamPoolOptions = {}) {
    this.#pool = new KeepAlivePool(origin, {
      connections: opts.connections ?? 4096,
      connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
    });
  }

  /**
   * Sends `request` (a whole HTTP/1.1 request: head and body) and reports its response to
   * `handler`; `keepBody`: every body byte read also goes to `handler.onKept` (see {@link Exchange.flushKept}).
   */
  send(request: Buffer, handler: ExchangeHandler, keepBody = false): Exchange {
    const ex = new Exchange(this.#pool, request, handler, keepBody);
    this.#pool.acquire(ex);
    return ex;
  }

  /** Destroys idle connections and fails queued exchanges; one in progress ends when its call cancels it. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** One request on one connection, and the reading of its response. */
export class Exchange implements ConnectionReader, ConnectionWaiter {
  readonly #pool: KeepAlivePool;
  readonly #request: Buffer;
  readonly #handler: ExchangeHandler;
  #conn: Connection | null = null;
  readonly #head = new HeadReader();
  #scanner: BodyScanner | null = null;
  readonly #keepBody: boolean;
  /**
   * Body bytes as read, appended and never overwritten (a region handed out stays valid): a read
   * costs one copy and no new object. A full arena is left to whoever still holds a view of it
   * (and to {@link body} when the body is kept).
   */
  #arena: Buffer = EMPTY;
  #used = 0;
  /** With `keepBody`: the arena's bytes before this offset went to `onKept`. */
  #fed = 0;
  /** Where an unfinished chunk header begins in the arena (-1: none): it is scanned again with the next read. */
  #carryAt = -1;
  #gotBytes = false;
  /** See {@link terminalEnd}. */
  #terminalEnd = -1;
  #retried = false;
  #over = false;
  #paused = false;
  #keepAlive = true;

  constructor(pool: KeepAlivePool, request: Buffer, handler: ExchangeHandler, keepBody: boolean) {
    this.#pool = pool;
    this.#request = request;
    this.#handler = handler;
    this.#keepBody = keepBody;
  }

  /** With `keepBody`: hands the body bytes read and not yet handed on to `onKept` now (an unfinished chunk header stays). */
  flushKept(): void {
    if (!this.#keepBody) return;
    const end = this.#carryAt >= 0 ? this.#carryAt : this.#used;
    if (end <= this.#fed) return;
    const from = this.#fed;
    this.#fed = end;
    this.#handler.onKept?.(this.#arena.subarray(from, end));
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
      c.reader = null;
      c.socket.destroy();
    } else this.#pool.cancel(this);
  }

  /**
   * The body bytes forwarded so far end between two chunks and at the end of an SSE event, so a
   * reader has seen only whole events and whole chunks.
   */
  cleanCut(): boolean {
    const s = this.#scanner;
    return s !== null && s.framing === 'chunked' && (s.done || s.atChunkStart) && s.endsEvent();
  }

  /**
   * During the `onBody` call that carries a chunked body's last bytes: where its last chunk ends in
   * that buffer when the last chunk is a plain `0\r\n\r\n` right after them (so a relay may forward
   * it in the same write); -1 otherwise.
   */
  terminalEnd(): number {
    return this.#terminalEnd;
  }

  /** The last payload bytes of the body so far (see {@link BodyScanner.tail}). */
  tail(): { bytes: Buffer; partial: boolean } {
    return this.#scanner ? this.#scanner.tail() : { bytes: Buffer.alloc(0), partial: false };
  }

  /** @internal */
  attach(c: Connection): void {
    if (this.#over) {
      this.#pool.release(c);
      return;
    }
    this.#conn = c;
    c.reader = this;
    const s = c.socket;
    if (this.#paused) s.pause();
    else if (s.isPaused()) s.resume();
    // one write(2) on a connected socket with nothing queued; the stream takes the rest (and reports errors)
    let at = 0;
    if (!s.connecting && s.writableLength === 0) {
      const fd = socketFd(s);
      if (fd >= 0) at = writeDirect(fd, this.#request, 0, this.#request.length);
    }
    if (at < this.#request.length) s.write(at === 0 ? this.#request : this.#request.subarray(at));
  }

  /** @internal */
  refused(): void {
    if (this.#over) return;
    this.#over = true;
    this.#handler.onError(new WireError('UPSTREAM_CLOSED', 'the router closed its connections to the worker'));
  }

  /**
   * @internal Bytes read on the connection: `read[0, n)` of the shared read buffer (copied out at
   * once), or all of a buffer of its own when `n` is -1.
   */
  onBytes(read: Buffer, n: number): void {
    if (this.#over) return;
    this.#gotBytes = true;
    const len = n < 0 ? read.length : n;
    const scanner = this.#scanner;
    if (scanner === null) this.#readHead(read, len);
    else this.#scanRead(scanner, n < 0 ? read : leadingBytes(read, n), 0, len);
  }

  /** Appends `read[start, end)` to the arena and scans it (with an unfinished chunk header before it). */
  #scanRead(scanner: BodyScanner, read: Buffer, start: number, end: number): void {
    this.#reserve(end - start);
    const at = this.#used;
    // all of `read` (the usual case): set() copies it with no view made
    if (start === 0 && end === read.length) this.#arena.set(read, at);
    else read.copy(this.#arena, at, start, end);
    this.#used = at + end - start;
    const carry = this.#carryAt;
    this.#carryAt = -1;
    this.#body(scanner, this.#arena, carry >= 0 ? carry : at, at);
  }

  /** Makes room for `len` more bytes at the end of the arena. */
  #reserve(len: number): void {
    if (this.#used + len <= this.#arena.length) return;
    // A fresh arena takes along only an unfinished chunk header (it is scanned again, so it must
    // stay contiguous); a kept body's bytes before it go to the handler, and the arena is let go.
    const from = this.#carryAt >= 0 ? this.#carryAt : this.#used;
    if (this.#keepBody && from > this.#fed) this.#handler.onKept?.(this.#arena.subarray(this.#fed, from));
    this.#fed = 0;
    const live = this.#used - from;
    const next = newArena(Math.max(ARENA_BYTES, live + len));
    if (live > 0) this.#arena.copy(next, 0, from, this.#used);
    if (this.#carryAt >= 0) this.#carryAt = 0;
    this.#arena = next;
    this.#used = live;
  }

  #readHead(read: Buffer, len: number): void {
    const r = this.#head.push(read, 0, len);
    if (r.kind === 'partial') return;
    if (r.kind !== 'head') {
      this.#error(new WireError('UPSTREAM_PROTOCOL', `the worker sent ${r.message}`));
      return;
    }
    const { head, buf, rest } = r;
    const end = buf === read ? len : buf.length;
    const framing = bodyFraming(head);
    const scanner = new BodyScanner(framing, Math.max(0, head.length));
    this.#scanner = scanner;
    this.#keepAlive = !head.close;
    this.#handler.onHead(head.status, head.headers, framing);
    if (this.#over) return;
    if (scanner.done) {
      this.#finish(rest === end);
      return;
    }
    if (rest < end) this.#scanRead(scanner, buf, rest, end);
  }

  /** Scans `buf[start, #used)` (bytes before `resumeAt` were scanned before) and hands the forwardable ones on. */
  #body(scanner: BodyScanner, buf: Buffer, start: number, resumeAt: number): void {
    const end = this.#used;
    const fwd = scanner.scan(buf, start, end, resumeAt);
    if (scanner.malformed) {
      // the whole chunks before the bad bytes go on; the stream then fails at once (not at the idle timeout)
      if (fwd > start) this.#handler.onBody(buf, start, fwd);
      this.#error(new WireError('UPSTREAM_PROTOCOL', 'the worker sent a malformed chunk'));
      return;
    }
    if (scanner.done) {
      if (fwd > start) {
        const last = scanner.bodyEnd;
        this.#terminalEnd = last - fwd === LAST_CHUNK.length && buf.compare(LAST_CHUNK, 0, LAST_CHUNK.length, fwd, last) === 0 ? last : -1;
        this.#handler.onBody(buf, start, fwd);
        this.#terminalEnd = -1;
      }
      if (this.#over) return;
      this.#finish(scanner.bodyEnd === end);
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
        c.reader = null;
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
      c.reader = null;
      c.socket.destroy();
    }
    this.#handler.onError(e);
  }

  /** @internal */
  onError(e: Error): void {
    if (this.#retryStale()) return;
    const code = (e as { code?: string }).code;
    this.#error(code === 'WIRE_CONNECT_TIMEOUT' ? new WireError('UPSTREAM_CONNECT_TIMEOUT', e.message) : e);
  }

  /** @internal The connection closed under the exchange. */
  onClose(): void {
    if (this.#over) return;
    if (this.#retryStale()) return;
    if (this.#scanner?.closed()) {
      const c = this.#conn;
      if (c) c.reader = null;
      this.#conn = null;
      this.#over = true;
      this.#handler.onEnd();
      return;
    }
    this.#error(new WireError('UPSTREAM_CLOSED', this.#gotBytes ? 'closed the connection mid-response' : 'closed the connection'));
  }

  /** A kept-alive connection the worker had closed meanwhile: send once more on a new one. */
  #retryStale(): boolean {
    const c = this.#conn;
    if (this.#over || this.#gotBytes || this.#retried || !c || !c.reused) return false;
    this.#retried = true;
    c.reader = null;
    this.#conn = null;
    this.#pool.acquire(this, true);
    return true;
  }
}
