import { TailgateError } from '../core/index.js';
import { requestHeadersOf, type ResolvedBenchOptions } from './options.js';
import { requestPayload } from './payload.js';

/** AIPerf's `--wait-for-model-mode`: `/v1/models` lists the model, a one-token inference answers, or both in turn. */
export type WaitForModelMode = 'models' | 'inference' | 'both';

/** Options of {@link waitForModel}; AIPerf's `--wait-for-model-*` flags. */
export interface WaitForModelOptions {
  timeoutMs: number;
  /** @default 5000 */
  intervalMs?: number;
  /** @default 'inference' */
  mode?: WaitForModelMode;
  signal?: AbortSignal;
}

/** One readiness probe of one target; null when ready, else why not. */
async function probeOnce(o: ResolvedBenchOptions, t: ResolvedBenchOptions['targets'][number], mode: WaitForModelMode, timeoutMs: number): Promise<string | null> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    if (mode !== 'inference') {
      const res = await fetch(`${t.url}/v1/models`, { headers: requestHeadersOf(o, false), signal });
      const text = await res.text();
      if (!res.ok) return `${t.url}/v1/models: HTTP ${res.status}`;
      const ids = (JSON.parse(text) as { data?: { id?: unknown }[] }).data?.map((m) => m.id) ?? [];
      if (!ids.includes(o.model)) return `${t.url}/v1/models does not list ${o.model}`;
    }
    if (mode !== 'models') {
      // A canned one-token request, not streamed, to the run's own endpoint.
      const body = requestPayload({ prompt: 'ping', maxTokens: 1 }, { model: o.model, endpointType: o.endpointType, streaming: false, extraInputs: {} });
      const res = await fetch(`${t.origin}${t.path}`, { method: 'POST', headers: requestHeadersOf(o, false), body: JSON.stringify(body), signal });
      await res.arrayBuffer();
      if (!res.ok) return `${t.path}: HTTP ${res.status}`;
    }
    return null;
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause?.code;
    return `${t.origin}: ${cause ?? (e as Error).message}`;
  }
}

/**
 * Waits until every target serves the model (AIPerf `--wait-for-model-timeout`), probing every
 * `intervalMs`; returns at once when all are ready. Throws NOT_READY naming the last reason when
 * `timeoutMs` passes, or when `signal` aborts.
 *
 * @example await waitForModel(resolveBenchOptions(opts), { timeoutMs: 300_000, mode: 'both' });
 */
export async function waitForModel(o: ResolvedBenchOptions, w: WaitForModelOptions): Promise<void> {
  const deadline = Date.now() + w.timeoutMs;
  const interval = w.intervalMs ?? 5000;
  const mode = w.mode ?? 'inference';
  let pending = [...o.targets];
  let why: string;
  for (;;) {
    const results = await Promise.all(pending.map(async (t) => ({ t, why: await probeOnce(o, t, mode, Math.max(1000, Math.min(interval, deadline - Date.now()))) })));
    pending = results.filter((r) => r.why !== null).map((r) => r.t);
    if (pending.length === 0) return;
    why = results.find((r) => r.why !== null)!.why!;
    const left = deadline - Date.now();
    if (left <= 0 || w.signal?.aborted === true) break;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        w.signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(interval, left));
      w.signal?.addEventListener('abort', done, { once: true });
    });
  }
  throw new TailgateError('NOT_READY', `the model ${o.model} was not ready within ${w.timeoutMs / 1000} s (--wait-for-model-timeout): ${why}`);
}
