import { request } from 'undici';
import { parsePrometheusText, type Sample } from './prometheus-text.js';

/** The outcome of one scrape: samples, or a one-line reason (never throws). */
export type ScrapeResult = { ok: true; samples: Sample[] } | { ok: false; error: string };

/**
 * Fetches a `/metrics` page once and parses it, within `timeoutMs`.
 *
 * @example const r = await scrapeOnce('http://127.0.0.1:8000/metrics', 2000); if (r.ok) sumSamples(r.samples, 'vllm:num_requests_running');
 */
export async function scrapeOnce(url: string, timeoutMs: number, signal?: AbortSignal): Promise<ScrapeResult> {
  const timeout = AbortSignal.timeout(Math.max(1, timeoutMs));
  const s = signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
  try {
    const res = await request(url, { method: 'GET', signal: s, headers: { accept: 'text/plain' } });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return { ok: false, error: `${url}: HTTP ${res.statusCode}` };
    }
    const text = await res.body.text();
    return { ok: true, samples: parsePrometheusText(text) };
  } catch (e) {
    if (timeout.aborted) return { ok: false, error: `${url}: no answer within ${timeoutMs} ms` };
    if (signal?.aborted === true) return { ok: false, error: `${url}: scrape cancelled` };
    const err = e as { code?: string; message?: string };
    return { ok: false, error: `${url}: ${err.code ?? 'error'} ${err.message ?? String(e)}`.trim() };
  }
}
