import { request } from 'undici';
import type { ResolvedValidateOptions, ValidateEvent } from './options.js';

/** A worker validate watches: `host:port` id and base URL. */
export interface WorkerTarget {
  id: string;
  url: string;
}

/** How workers were counted: the router's `/workers`, `--worker-url` health checks, or not at all. */
export type ReadinessMode = 'router' | 'worker-urls' | 'endpoint';

/** The outcome of the readiness wait and the serve probe. */
export interface Readiness {
  mode: ReadinessMode;
  expected: number;
  /** Workers ready at the end of the wait; null when they cannot be counted (mode `endpoint`). */
  ready: number | null;
  ok: boolean;
  waitedMs: number;
  /** Every known worker (ready or not); their `/metrics` are scraped during trials. */
  workers: WorkerTarget[];
  notReady: string[];
  /** The router's `/metrics`, when the target is a tailgate router. */
  routerMetricsUrl: string | null;
  probe: { ok: boolean; latencyMs: number; status: number | null; content: string; error: string | null } | null;
  message: string;
}

/** `600000` -> `10m0s`, `3000` -> `3s`, `1500` -> `1.5s`, `250` -> `250ms` (Go's duration style). */
export function formatWait(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const totalS = Math.round(ms / 100) / 10;
  const h = Math.floor(totalS / 3600);
  const m = Math.floor((totalS - h * 3600) / 60);
  const s = Math.round((totalS - h * 3600 - m * 60) * 10) / 10;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

function hostPort(url: string): string {
  return new URL(url).host;
}

function timeoutSignal(ms: number, signal?: AbortSignal): AbortSignal {
  const t = AbortSignal.timeout(Math.max(1, ms));
  return signal ? AbortSignal.any([t, signal]) : t;
}

async function getJson(url: string, timeoutMs: number, signal?: AbortSignal): Promise<{ status: number; body: unknown } | null> {
  try {
    const res = await request(url, { method: 'GET', signal: timeoutSignal(timeoutMs, signal), headers: { accept: 'application/json' } });
    const text = await res.body.text();
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    return { status: res.statusCode, body };
  } catch {
    return null;
  }
}

interface RouterWorker {
  id: string;
  url: string;
  healthy: boolean;
  ejected: boolean;
}

function asRouterWorkers(body: unknown): RouterWorker[] | null {
  if (!Array.isArray(body)) return null;
  const out: RouterWorker[] = [];
  for (const w of body as unknown[]) {
    if (typeof w !== 'object' || w === null) return null;
    const r = w as Record<string, unknown>;
    if (typeof r['id'] !== 'string' || typeof r['url'] !== 'string' || typeof r['healthy'] !== 'boolean') return null;
    out.push({ id: r['id'], url: r['url'].replace(/\/+$/, ''), healthy: r['healthy'], ejected: r['ejected'] === true });
  }
  return out;
}

/** The router's worker list when `url` is a tailgate router (GET /workers answers a list), else null. */
export async function routerWorkers(url: string, timeoutMs = 5000, signal?: AbortSignal): Promise<RouterWorker[] | null> {
  const r = await getJson(`${url}/workers`, timeoutMs, signal);
  return r !== null && r.status === 200 ? asRouterWorkers(r.body) : null;
}

async function healthy(url: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  try {
    const res = await request(`${url}/health`, { method: 'GET', signal: timeoutSignal(timeoutMs, signal) });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Waits until every expected worker is ready: counted from the router's `GET /workers` (healthy and
 * not ejected) when the target is a tailgate router, else from each `--worker-url`'s `/health`.
 * When neither is available, only the target's reachability is checked. Prints progress through
 * `onEvent` when the count changes (and every 10 s). Never throws for a fleet that is not ready:
 * the result says how many of how many were ready.
 */
export async function waitForWorkers(o: ResolvedValidateOptions, onEvent: ValidateEvent, signal?: AbortSignal): Promise<Readiness> {
  const t0 = performance.now();
  const deadline = t0 + o.readyTimeoutMs;
  const checkTimeout = Math.max(200, Math.min(2000, o.readyPollMs * 2));
  const first = await routerWorkers(o.url, checkTimeout, signal);
  const mode: ReadinessMode = first !== null ? 'router' : o.workerUrls.length > 0 ? 'worker-urls' : 'endpoint';
  const expected = mode === 'endpoint' ? 1 : o.expectedWorkers;
  if (mode === 'endpoint') {
    onEvent(`readiness: ${o.url} is not a tailgate router and no --worker-url was given; checking the endpoint only`);
  }
  let lastLine = '';
  let lastPrint = 0;
  let workers: WorkerTarget[] = [];
  let readyIds: string[] = [];
  let snapshot: RouterWorker[] | null = first;
  for (;;) {
    if (mode === 'router') {
      snapshot ??= await routerWorkers(o.url, checkTimeout, signal);
      if (snapshot !== null) {
        workers = snapshot.map((w) => ({ id: w.id, url: w.url }));
        readyIds = snapshot.filter((w) => w.healthy && !w.ejected).map((w) => w.id);
      }
      snapshot = null;
    } else if (mode === 'worker-urls') {
      workers = o.workerUrls.map((u) => ({ id: hostPort(u), url: u }));
      const ok = await Promise.all(workers.map((w) => healthy(w.url, checkTimeout, signal)));
      readyIds = workers.filter((_, i) => ok[i]).map((w) => w.id);
    } else {
      // A bare endpoint: any HTTP answer on /health or /v1/models counts as up.
      const r = (await getJson(`${o.url}/health`, checkTimeout, signal)) ?? (await getJson(`${o.url}/v1/models`, checkTimeout, signal));
      readyIds = r !== null && r.status < 500 ? [hostPort(o.url)] : [];
    }
    const now = performance.now();
    const ready = readyIds.length;
    const line = `readiness: ${ready} of ${expected} ${mode === 'endpoint' ? 'endpoint' : 'workers'} ready`;
    if (line !== lastLine || now - lastPrint >= 10_000) {
      onEvent(`${line} (${formatWait(now - t0)} of ${formatWait(o.readyTimeoutMs)})`);
      lastLine = line;
      lastPrint = now;
    }
    const notReady = workers.filter((w) => !readyIds.includes(w.id)).map((w) => w.id);
    const base = { mode, expected, workers, notReady, routerMetricsUrl: mode === 'router' ? `${o.url}/metrics` : null, probe: null };
    if (ready >= expected) {
      return { ...base, ready: mode === 'endpoint' ? null : ready, ok: true, waitedMs: now - t0, message: `${ready} of ${expected} ${mode === 'endpoint' ? 'endpoint' : 'workers'} ready after ${formatWait(now - t0)}` };
    }
    if (now >= deadline || signal?.aborted === true) {
      const waited = signal?.aborted === true ? now - t0 : o.readyTimeoutMs;
      const what = mode === 'endpoint' ? `endpoint ${o.url} not reachable` : `${ready} of ${expected} workers ready`;
      const which = notReady.length > 0 ? ` (not ready: ${notReady.slice(0, 8).join(', ')}${notReady.length > 8 ? ', ...' : ''})` : '';
      const known = mode !== 'endpoint' && workers.length < expected ? ` (only ${workers.length} known to ${mode === 'router' ? 'the router' : '--worker-url'})` : '';
      return { ...base, ready: mode === 'endpoint' ? 0 : ready, ok: false, waitedMs: now - t0, message: `${what} after ${formatWait(waited)}${which}${known}` };
    }
    await sleep(Math.min(o.readyPollMs, Math.max(0, deadline - now)), signal);
  }
}

/**
 * One chat (or completions) request that must come back 200 with content, within the generous
 * probe timeout (a cold first request can take ~42 s, docs/reference.md#the-seed).
 */
export async function serveProbe(o: ResolvedValidateOptions, signal?: AbortSignal): Promise<NonNullable<Readiness['probe']>> {
  const t0 = performance.now();
  const chat = o.endpointType === 'chat';
  const body = chat
    ? { model: o.model, messages: [{ role: 'user', content: 'Reply with one word.' }], max_tokens: 8, stream: false }
    : { model: o.model, prompt: 'Reply with one word.', max_tokens: 8, stream: false };
  const headers: Record<string, string> = { 'content-type': 'application/json', ...o.headers };
  if (o.apiKey !== null) headers['authorization'] = `Bearer ${o.apiKey}`;
  const s = timeoutSignal(o.probeTimeoutMs, signal);
  try {
    const res = await request(`${o.url}${chat ? '/v1/chat/completions' : '/v1/completions'}`, { method: 'POST', body: JSON.stringify(body), headers, signal: s });
    const text = await res.body.text();
    const latencyMs = performance.now() - t0;
    if (res.statusCode !== 200) {
      let msg = text.slice(0, 200);
      try {
        const j = JSON.parse(text) as { error?: { message?: string }; message?: string };
        msg = j.error?.message ?? j.message ?? msg;
      } catch {
        // not JSON: keep the text
      }
      return { ok: false, latencyMs, status: res.statusCode, content: '', error: `HTTP ${res.statusCode}: ${msg}` };
    }
    let content = '';
    try {
      const j = JSON.parse(text) as { choices?: { message?: { content?: string | null }; text?: string }[] };
      const c = j.choices?.[0];
      content = (chat ? c?.message?.content : c?.text) ?? '';
    } catch {
      return { ok: false, latencyMs, status: 200, content: '', error: 'the response is not JSON' };
    }
    return content.trim() === ''
      ? { ok: false, latencyMs, status: 200, content, error: 'the response has no content' }
      : { ok: true, latencyMs, status: 200, content, error: null };
  } catch (e) {
    const latencyMs = performance.now() - t0;
    const why = signal?.aborted === true ? 'interrupted' : latencyMs >= o.probeTimeoutMs - 5 ? `no answer within ${formatWait(o.probeTimeoutMs)}` : ((e as { code?: string }).code ?? (e as Error).message);
    return { ok: false, latencyMs, status: null, content: '', error: why };
  }
}

