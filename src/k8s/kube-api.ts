import { request } from 'undici';
import { TailgateError } from '../core/index.js';
import type { KubeConnection } from './connection.js';

/** An API call that failed: `status` is the HTTP status or a watch ERROR event's code (null: no answer). */
export class K8sApiError extends TailgateError {
  readonly status: number | null;

  constructor(message: string, status: number | null, cause?: unknown) {
    super(status === null ? 'ENDPOINT_UNREACHABLE' : 'PROTOCOL_ERROR', message, cause === undefined ? undefined : { cause });
    this.name = 'K8sApiError';
    this.status = status;
  }

  /** The resource version is too old (compacted): list again. */
  get gone(): boolean {
    return this.status === 410;
  }
}

/** One event of a watch stream, as the API server sends it (one JSON object per line). */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** A `Status` object (errors). */
interface ApiStatus {
  kind?: string;
  message?: string;
  reason?: string;
  code?: number;
}

function statusMessage(body: string, status: number): string {
  try {
    const s = JSON.parse(body) as ApiStatus;
    if (typeof s.message === 'string') return `${status} ${s.reason ?? ''}: ${s.message}`.replace(' :', ':');
  } catch {
    // not a Status object: use the text
  }
  return `${status}: ${body.slice(0, 200).trim() || 'no body'}`;
}

function errorText(e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  return err.cause?.code ?? err.code ?? err.cause?.message ?? err.message ?? String(e);
}

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

/** A thin client of the few API calls discovery makes: GET a list, GET a watch stream. */
export class KubeApi {
  readonly conn: KubeConnection;

  constructor(conn: KubeConnection) {
    this.conn = conn;
  }

  /** GET `path` and parse the JSON answer; non-2xx throws {@link K8sApiError} with the API's message. */
  async getJson<T>(path: string, params: Record<string, string | undefined>, signal?: AbortSignal, timeoutMs = 30_000): Promise<T> {
    const url = `${this.conn.server}${path}${query(params)}`;
    const t = AbortSignal.timeout(timeoutMs);
    let res;
    try {
      res = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json', ...this.conn.headers() },
        dispatcher: this.conn.dispatcher,
        signal: signal ? AbortSignal.any([signal, t]) : t,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (e) {
      if (e instanceof TailgateError) throw e;
      throw new K8sApiError(`cannot reach the Kubernetes API at ${this.conn.server} (${this.conn.source}): ${errorText(e)}`, null, e);
    }
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new K8sApiError(`Kubernetes API GET ${path}: ${statusMessage(text, res.statusCode)}`, res.statusCode);
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new K8sApiError(`Kubernetes API GET ${path}: the answer is not JSON`, res.statusCode, e);
    }
  }

  /**
   * Opens a watch (`?watch=1`) and calls `onEvent` for each event line until the server ends the
   * stream (resolves with the number of events) or the signal aborts. An ERROR event throws
   * {@link K8sApiError} with its code (410: relist).
   */
  async watch<T>(path: string, params: Record<string, string | undefined>, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal, idleTimeoutMs = 600_000): Promise<number> {
    const url = `${this.conn.server}${path}${query({ ...params, watch: '1' })}`;
    let res;
    try {
      res = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json', ...this.conn.headers() },
        dispatcher: this.conn.dispatcher,
        ...(signal ? { signal } : {}),
        headersTimeout: 30_000,
        // No byte for this long (bookmarks come about once a minute): treat the watch as dead.
        bodyTimeout: idleTimeoutMs,
      });
    } catch (e) {
      if (e instanceof TailgateError) throw e;
      throw new K8sApiError(`cannot reach the Kubernetes API at ${this.conn.server} (${this.conn.source}): ${errorText(e)}`, null, e);
    }
    if (res.statusCode !== 200) {
      const text = await res.body.text().catch(() => '');
      throw new K8sApiError(`Kubernetes API watch ${path}: ${statusMessage(text, res.statusCode)}`, res.statusCode);
    }
    let events = 0;
    let buf = '';
    const decoder = new TextDecoder();
    const line = (l: string): void => {
      if (l.trim() === '') return;
      let ev: WatchEvent<T>;
      try {
        ev = JSON.parse(l) as WatchEvent<T>;
      } catch (e) {
        throw new K8sApiError(`Kubernetes API watch ${path}: an event is not JSON`, 200, e);
      }
      if (ev.type === 'ERROR') {
        const s = ev.object as ApiStatus;
        throw new K8sApiError(`Kubernetes API watch ${path}: ${s.code ?? ''} ${s.reason ?? ''}: ${s.message ?? 'error event'}`, typeof s.code === 'number' ? s.code : 500);
      }
      events++;
      onEvent(ev);
    };
    try {
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk as Buffer, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const l = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          line(l);
        }
      }
      line(buf + decoder.decode());
    } catch (e) {
      res.body.destroy();
      if (e instanceof TailgateError) throw e;
      throw new K8sApiError(`Kubernetes API watch ${path} dropped: ${errorText(e)}`, null, e);
    }
    return events;
  }
}
