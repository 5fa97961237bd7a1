/** How a request ended. Expected outcomes are values, not exceptions. */
export type Outcome = 'ok' | 'http_error' | 'timeout' | 'aborted' | 'protocol_error' | 'connection_error';

/** A token count from both sides: the client's tokenizer and the server's `usage` (null when absent). */
export interface TokenCount {
  client: number;
  server: number | null;
}

/**
 * The one record every path produces (live bench, simulator) and every consumer reads
 * (`stats/`, `gate/`, `report/`). Times are milliseconds from the run's origin.
 */
export interface RequestRecord {
  id: string;
  phase: 'warmup' | 'profiling';
  /** The worker that served it (`host:port`), from `x-tailgate-worker` or the simulator. */
  worker: string | null;
  startMs: number;
  /** First non-empty content chunk; null when none arrived. */
  firstTokenMs: number | null;
  /** Arrival time of every content-bearing SSE message. */
  chunkMs: number[];
  endMs: number;
  inputTokens: TokenCount;
  outputTokens: TokenCount;
  outcome: Outcome;
  status: number | null;
  error: string | null;
  redispatched: boolean;
  migrated: boolean;
  /** The dataset conversation (the `session_id` of `inputs.json`) this request is a turn of. */
  conversationId?: string;
  /** Position in that conversation, 0 for the first turn. */
  turnIndex?: number;
  /**
   * Reasoning tokens, when the answer carried a reasoning channel (`reasoning_content` or
   * `reasoning`) or the server's usage counted some (`completion_tokens_details.reasoning_tokens`).
   * They are part of `outputTokens` (the OSL), as in AIPerf; client null when no reasoning text came.
   */
  reasoningTokens?: { client: number | null; server: number | null };
  /** With a reasoning channel: the first answer (non-reasoning) chunk, null when none came. */
  firstOutputMs?: number | null;
}
