import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** Receives what happens on a connection while it serves a request. */
export interface ConnectionReader {
  /**
   * Bytes read: `buf[0, n)` of a read buffer shared by every plain connection (copy what must
   * outlive the call), or, when `n` is -1, all of `buf`, a buffer of its own (TLS).
   */
  onBytes(buf: Buffer, n: number): void;
  onError(e: Error): void;
  /** The socket closed (after `onError`, when there was one). */
  onClose(): void;
}

/** Waits for a connection: {@link KeepAlivePool.acquire} hands it one now or when one frees up. */
export interface ConnectionWaiter {
  attach(c: Connection): void;
  /** The pool was closed before it had a connection for this waiter. */
  refused(): void;
}

/** One keep-alive socket of a pool. */
export class Connection {
  readonly socket: Socket;
  /** Who hears this socket's reads, errors and close; bytes that come with none are a protocol error (the socket is destroyed). */
  reader: ConnectionReader | null = null;
  /** It served a request before (a failure before any answer byte may be a keep-alive the server had closed). */
  reused = false;

  constructor(socket: Socket) {
    this.socket = socket;
  }
}

/** Connection settings of a {@link KeepAlivePool}. */
export interface KeepAlivePoolOptions {
  /** Open connections at most; more waiters queue in arrival order. @default Infinity */
  connections?: number;
  /** PEM CA bundle for https. */
  ca?: string | Buffer;
  /** A connection not established within this fails with `WIRE_CONNECT_TIMEOUT`; 0: no limit. @default 0 */
  connectTimeoutMs?: number;
  /** Size of the read buffer plain connections share. @default 65536 */
  readBufferBytes?: number;
}

/** A failure on the wire with a stable code (`WIRE_CONNECT_TIMEOUT`; the router's upstream adds its `UPSTREAM_*` ones, which its log shows). */
export class WireError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * One read buffer per size for every plain connection (`onread`): each read is handled synchronously
 * before the next, so nothing outlives the callback except copies; saves the stream machinery and an
 * allocation per read.
 */
const readBuffers = new Map<number, Buffer>();
function readBuffer(bytes: number): Buffer {
  let b = readBuffers.get(bytes);
  if (!b) readBuffers.set(bytes, (b = Buffer.allocUnsafe(bytes)));
  return b;
}

/**
 * Keep-alive HTTP/1.1 connections to one origin on raw sockets: idle connections are reused last in,
 * first out; past `connections` open ones, waiters queue in order and leave the queue when cancelled
 * (so a call that gave up while queued never takes a connection). What is read goes to the
 * connection's {@link ConnectionReader}, which owns the request it serves.
 */
export class KeepAlivePool {
  readonly #host: string;
  readonly #port: number;
  readonly #tls: boolean;
  readonly #max: number;
  readonly #ca: string | Buffer | undefined;
  readonly #connectTimeoutMs: number;
  readonly #readBuffer: Buffer;
  readonly #idle: Connection[] = [];
  readonly #waiting: ConnectionWaiter[] = [];
  /** Queued waiters that must not be given an idle connection (see {@link acquire}'s `fresh`). */
  readonly #fresh = new WeakSet<ConnectionWaiter>();
  #open = 0;
  #closed = false;

  /** `origin`: `http://host:port` or `https://host:port`. */
  constructor(origin: string, opts: KeepAlivePoolOptions = {}) {
    const u = new URL(origin);
    this.#tls = u.protocol === 'https:';
    this.#host = u.hostname.replace(/^\[|\]$/g, '');
    this.#port = Number(u.port || (this.#tls ? 443 : 80));
    this.#max = opts.connections ?? Number.POSITIVE_INFINITY;
    this.#ca = opts.ca;
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? 0;
    this.#readBuffer = readBuffer(opts.readBufferBytes ?? 64 * 1024);
  }

  /** Open connections (idle and busy). */
  get open(): number {
    return this.#open;
  }

  /** Waiters in the queue. */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * Gives `w` a connection now (an idle one, else a new one when under the cap) or queues it.
   * `fresh`: never an idle one (a request resent after a stale keep-alive).
   */
  acquire(w: ConnectionWaiter, fresh = false): void {
    if (this.#closed) {
      w.refused();
      return;
    }
    if (!fresh) {
      for (let c = this.#idle.pop(); c; c = this.#idle.pop()) {
        if (!c.socket.destroyed && c.socket.writable) {
          w.attach(c);
          return;
        }
      }
    }
    if (this.#open < this.#max) w.attach(this.#connect());
    else {
      this.#waiting.push(w);
      if (fresh) this.#fresh.add(w);
    }
  }

  /** `w` gave up while queued: it leaves the queue and will not be handed a connection. */
  cancel(w: ConnectionWaiter): void {
    const i = this.#waiting.indexOf(w);
    if (i >= 0) this.#waiting.splice(i, 1);
  }

  /** A response ended cleanly on `c`: it serves the next waiter, or waits idle (still reading, so a server's close is seen). */
  release(c: Connection): void {
    c.reader = null;
    c.reused = true;
    if (c.socket.isPaused()) c.socket.resume();
    const next = this.#waiting.shift();
    // a waiter for a fresh connection may take this one too: it has just answered, so it is not stale
    if (next) next.attach(c);
    else if (this.#closed) c.socket.destroy();
    else this.#idle.push(c);
  }

  /** Destroys idle connections and refuses queued waiters; busy ones end with their requests. */
  close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) c.socket.destroy();
    for (const w of this.#waiting.splice(0)) w.refused();
    return Promise.resolve();
  }

  #connect(): Connection {
    this.#open++;
    let socket: Socket;
    if (this.#tls) {
      const host = this.#host;
      socket = tlsConnect({ host, port: this.#port, servername: isIp(host) ? '' : host, ALPNProtocols: ['http/1.1'], ...(this.#ca !== undefined ? { ca: this.#ca } : {}) });
      socket.setNoDelay(true);
      socket.on('data', (d: Buffer) => {
        const r = conn.reader;
        if (r) r.onBytes(d, -1);
        else socket.destroy();
      });
    } else {
      const buffer = this.#readBuffer;
      socket = netConnect({
        host: this.#host,
        port: this.#port,
        noDelay: true,
        onread: {
          buffer,
          callback: (n: number) => {
            const r = conn.reader;
            if (r) r.onBytes(buffer, n);
            else socket.destroy();
            return true;
          },
        },
      });
    }
    // The read callbacks above run only once the socket reads, after this line.
    const conn = new Connection(socket);
    const timeoutMs = this.#connectTimeoutMs;
    if (timeoutMs > 0) {
      // a timer of its own: one set with socket.setTimeout stays on the socket, refreshed by every read
      const timer = setTimeout(() => socket.destroy(new WireError('WIRE_CONNECT_TIMEOUT', `no connection within ${timeoutMs} ms`)), timeoutMs);
      timer.unref();
      const clear = (): void => clearTimeout(timer);
      socket.once(this.#tls ? 'secureConnect' : 'connect', clear);
      socket.once('close', clear);
    }
    socket.on('error', (e) => conn.reader?.onError(e));
    socket.on('close', () => {
      this.#open--;
      const i = this.#idle.indexOf(conn);
      if (i >= 0) this.#idle.splice(i, 1);
      conn.reader?.onClose();
      const next = this.#waiting.shift();
      if (next) this.acquire(next, this.#fresh.has(next));
    });
    return conn;
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
