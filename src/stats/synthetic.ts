import type { RequestRecord } from '../core/index.js';

/** Shape of a synthetic streamed request: start, TTFT, then `tokens` chunks `itlMs` apart. */
export interface SyntheticRequest {
  id?: string;
  phase?: 'warmup' | 'profiling';
  worker?: string | null;
  startMs: number;
  ttftMs: number;
  itlMs: number;
  tokens: number;
  inputTokens?: number;
  serverTokens?: boolean;
}

/**
 * Builds a well-formed ok record (one chunk per token) for tests and synthetic timelines.
 *
 * @example
 * syntheticRecord({ startMs: 0, ttftMs: 100, itlMs: 10, tokens: 3 }).chunkMs; // [100, 110, 120]
 */
export function syntheticRecord(s: SyntheticRequest): RequestRecord {
  const chunkMs: number[] = [];
  for (let i = 0; i < s.tokens; i++) chunkMs.push(s.startMs + s.ttftMs + i * s.itlMs);
  const end = chunkMs.length > 0 ? chunkMs[chunkMs.length - 1]! : s.startMs + s.ttftMs;
  const input = s.inputTokens ?? 128;
  return {
    id: s.id ?? `r${Math.round(s.startMs * 1000)}`,
    phase: s.phase ?? 'profiling',
    worker: s.worker ?? null,
    startMs: s.startMs,
    firstTokenMs: s.tokens > 0 ? s.startMs + s.ttftMs : null,
    chunkMs,
    endMs: end,
    inputTokens: { client: input, server: s.serverTokens ? input : null },
    outputTokens: { client: s.tokens, server: s.serverTokens ? s.tokens : null },
    outcome: 'ok',
    status: 200,
    error: null,
    redispatched: false,
    migrated: false,
  };
}

/** A failed record (no content) for tests. */
export function syntheticError(s: { startMs: number; endMs: number; outcome?: RequestRecord['outcome']; status?: number | null; error?: string; worker?: string | null; phase?: 'warmup' | 'profiling' }): RequestRecord {
  return {
    id: `e${Math.round(s.startMs * 1000)}`,
    phase: s.phase ?? 'profiling',
    worker: s.worker ?? null,
    startMs: s.startMs,
    firstTokenMs: null,
    chunkMs: [],
    endMs: s.endMs,
    inputTokens: { client: 128, server: null },
    outputTokens: { client: 0, server: null },
    outcome: s.outcome ?? 'http_error',
    status: s.status === undefined ? 500 : s.status,
    error: s.error ?? 'Internal Server Error',
    redispatched: false,
    migrated: false,
  };
}
