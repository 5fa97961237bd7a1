import { readFileSync } from 'node:fs';
import { TailgateError, countTokens, createRng, promptTokenIds } from '../core/index.js';
import { PROMPT_WORDS } from './corpus.js';
import { concatIds, textPiece, type Piece, type Session, type Turn, type Workload } from './session.js';
import { readVerbatim, verbatimText, type VerbatimTurn } from './trace-verbatim.js';

/** One request of a trace file (Mooncake's JSONL layout, as AIPerf's `mooncake_trace` reads it). */
export interface TraceLine {
  /** 1-based line number in the file. */
  line: number;
  /** Arrival time, ms (`timestamp`); null when the line has none. */
  timestampMs: number | null;
  /** Prompt tokens (`input_length`). */
  inputLength: number;
  /** Tokens to ask for (`output_length`); 0 on a verbatim row without one (none is asked for). */
  outputLength: number;
  /** One id per block of prompt tokens (`hash_ids`): equal ids, equal blocks. */
  hashIds: number[];
  /** The exact prompt (`text_input`), which then replaces `input_length` and `hash_ids`. */
  textInput: string | null;
  /** Rows sharing a `session_id` are one multi-turn session, in file order; null: a session of its own. */
  sessionId: string | null;
  /** Ms to wait after the previous turn's answer before sending this one (`delay`); null when absent. */
  delayMs: number | null;
  /** A row sent as written (`messages` or `payload`, read with `verbatim: true` only); null otherwise. */
  verbatim: VerbatimTurn | null;
  /** Body fields the row adds to its request (`extra`); null when absent. */
  extra: Record<string, unknown> | null;
}

/** Options of {@link parseTrace}. */
export interface ParseTraceOptions {
  /** Read AIPerf's `messages`, `tools`, `payload` and `extra` row fields (bench replays them; the simulator does not). @default false */
  verbatim?: boolean;
}

/** Tokens per hash id, as in the Mooncake traces and AIPerf (`--prompt-input-tokens-block-size`). */
export const TRACE_BLOCK_TOKENS = 512;

/** Row fields AIPerf's mooncake_trace loader reads that bench does not, with what they mean there. */
const UNSUPPORTED_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['messages', 'a pre-built message list sent as is'],
  ['payload', 'a verbatim request body'],
  ['tools', 'tool definitions sent with the messages'],
  ['extra', 'extra body fields of the row'],
  ['context_mode', 'how a session\'s history is carried'],
];

function lineError(source: string, line: number, message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', `${source} line ${line}: ${message}`);
}

/**
 * Parses a JSONL trace: one object per line with `timestamp` (ms, optional), `input_length`,
 * `output_length` and `hash_ids`, or `text_input` instead of the length and ids, and optionally
 * AIPerf's `session_id` and `delay` (ms) for multi-turn sessions. Blank lines are skipped. A bad line is one error naming the file and the line.
 *
 * @example
 * parseTrace('{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}', 't.jsonl');
 * @throws TailgateError CONFIG_INVALID
 */
export function parseTrace(text: string, source: string, opts: ParseTraceOptions = {}): TraceLine[] {
  const out: TraceLine[] = [];
  const rows = text.split('\n');
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!.trim();
    if (row === '') continue;
    const line = i + 1;
    let v: unknown;
    try {
      v = JSON.parse(row);
    } catch {
      throw lineError(source, line, 'not a JSON object');
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw lineError(source, line, 'not a JSON object');
    const o = v as Record<string, unknown>;
    // Fields of AIPerf's richer Mooncake rows that bench does not replay: refused, never flattened into single requests.
    const v2 = opts.verbatim === true ? readVerbatim(o, `${source} line ${line}`) : { verbatim: null, extra: null };
    for (const [key, what] of UNSUPPORTED_FIELDS) {
      if (opts.verbatim === true && key !== 'context_mode') continue;
      if (o[key] !== undefined) throw lineError(source, line, `${key} (${what} in AIPerf) is not replayed by tailgate bench; only timestamp, input_length, output_length, hash_ids and text_input are`);
    }
    const int = (key: string, min: number): number => {
      const x = o[key];
      if (typeof x !== 'number' || !Number.isInteger(x) || x < min) {
        throw lineError(source, line, `${key} must be an integer >= ${min} (got ${JSON.stringify(x) ?? 'nothing'})`);
      }
      return x;
    };
    let timestampMs: number | null = null;
    if (o['timestamp'] !== undefined) {
      const t = o['timestamp'];
      if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) throw lineError(source, line, `timestamp must be a number of ms >= 0 (got ${JSON.stringify(t)})`);
      timestampMs = t;
    }
    let textInput: string | null = null;
    if (v2.verbatim) textInput = verbatimText(v2.verbatim);
    else if (o['text_input'] !== undefined) {
      if (typeof o['text_input'] !== 'string' || countTokens(o['text_input']) === 0) throw lineError(source, line, 'text_input must be a non-empty string');
      textInput = o['text_input'];
    }
    const inputLength = textInput === null ? int('input_length', 1) : countTokens(textInput);
    const outputLength = v2.verbatim && (o['output_length'] === undefined || o['output_length'] === null) ? 0 : int('output_length', 1);
    let hashIds: number[] = [];
    if (o['hash_ids'] !== undefined && textInput === null) {
      const h = o['hash_ids'];
      if (!Array.isArray(h) || !h.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0)) {
        throw lineError(source, line, 'hash_ids must be a list of integers >= 0');
      }
      hashIds = h as number[];
    }
    let sessionId: string | null = null;
    if (o['session_id'] !== undefined && o['session_id'] !== null) {
      if (typeof o['session_id'] !== 'string' || o['session_id'] === '') throw lineError(source, line, `session_id must be a non-empty string (got ${JSON.stringify(o['session_id'])})`);
      sessionId = o['session_id'];
    }
    let delayMs: number | null = null;
    if (o['delay'] !== undefined && o['delay'] !== null) {
      const d = o['delay'];
      if (typeof d !== 'number' || !Number.isFinite(d) || d < 0) throw lineError(source, line, `delay must be a number of ms >= 0 (got ${JSON.stringify(d)})`);
      delayMs = d;
    }
    out.push({ line, timestampMs, inputLength, outputLength, hashIds, textInput: v2.verbatim ? null : textInput, sessionId, delayMs, verbatim: v2.verbatim, extra: v2.extra });
  }
  if (out.length === 0) throw new TailgateError('CONFIG_INVALID', `${source}: the trace has no requests`);
  return out;
}

/**
 * Reads and parses a trace file.
 *
 * @throws TailgateError CONFIG_INVALID (unreadable file or a bad line)
 */
export async function loadTrace(path: string, opts: ParseTraceOptions = {}): Promise<TraceLine[]> {
  const { readFile } = await import('node:fs/promises');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read trace ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return parseTrace(text, path, opts);
}

/**
 * Whether any line of a trace carries a `timestamp`: AIPerf then runs the trace on its fixed
 * schedule whatever the load flags say. Read synchronously because it decides the run's mode;
 * stops at the first timestamp. Lines that are not JSON are left to {@link parseTrace} to report.
 *
 * @throws TailgateError CONFIG_INVALID (unreadable file)
 */
export function traceHasTimestamps(path: string): boolean {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot read trace ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  for (const row of text.split('\n')) {
    if (!row.includes('"timestamp"')) continue;
    try {
      const v = JSON.parse(row) as Record<string, unknown> | null;
      if (v !== null && typeof v === 'object' && v['timestamp'] !== undefined && v['timestamp'] !== null) return true;
    } catch {
      // parseTrace names the bad line when the trace is loaded
    }
  }
  return false;
}

/** Options of {@link traceWorkload}. */
export interface TraceOptions {
  /** Salts the words of every block (AIPerf `--random-seed`). */
  seed: number;
  /** @default TRACE_BLOCK_TOKENS (512) */
  blockTokens?: number;
  /** Shift timestamps so the first is 0 (AIPerf `--fixed-schedule-auto-offset`). @default false */
  autoOffset?: boolean;
}

interface Block {
  words: string[];
  ids: Uint32Array;
}

function randomWords(seed: number, n: number): string[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => PROMPT_WORDS[rng.int(0, PROMPT_WORDS.length - 1)]!);
}

/**
 * Turns trace lines into sessions: rows sharing a `session_id` are the turns of one session, in
 * file order (each later turn sent after the previous answer and its `delay`, or under a fixed
 * schedule at its own `timestamp` if it has one and the answer is in by then, carrying the history);
 * any other row is a session of one turn. Sessions are in the order their first row appears. Each hash id stands for one
 * block of `blockTokens` words drawn from a generator seeded by the id (and the seed), so equal
 * ids give equal text and equal token ids; the prompt is the blocks in order, cut to
 * `input_length` (filled with words unique to the line if the blocks are too few).
 *
 * @example
 * const w = traceWorkload(parseTrace(text, 'trace.jsonl'), { seed: 0 });
 * w.sessions[0].turns[0].tokens; // input_length of line 1
 */
export function traceWorkload(lines: readonly TraceLine[], opts: TraceOptions): Workload {
  const blockTokens = opts.blockTokens ?? TRACE_BLOCK_TOKENS;
  if (!Number.isInteger(blockTokens) || blockTokens < 1) throw new TailgateError('CONFIG_INVALID', `block size must be an integer >= 1 (got ${blockTokens})`);
  const blocks = new Map<number, Block>();
  const salt = Math.imul(opts.seed, 0x9e3779b1);
  const block = (id: number): Block => {
    let b = blocks.get(id);
    if (!b) {
      const words = randomWords((salt ^ id) | 0, blockTokens);
      blocks.set(id, (b = { words, ids: promptTokenIds(words.join(' ')) }));
    }
    return b;
  };
  // AIPerf groups rows by session_id (first appearance order); a row without one is a session of its own.
  const groups: TraceLine[][] = [];
  const byId = new Map<string, TraceLine[]>();
  for (const l of lines) {
    if (l.sessionId === null) groups.push([l]);
    else {
      let g = byId.get(l.sessionId);
      if (!g) {
        byId.set(l.sessionId, (g = []));
        groups.push(g);
      }
      g.push(l);
    }
  }
  // AIPerf's schedule zero under auto offset is the earliest first-turn timestamp.
  let first = Infinity;
  for (const g of groups) if (g[0]!.timestampMs !== null && g[0]!.timestampMs < first) first = g[0]!.timestampMs;
  const offset = opts.autoOffset && first !== Infinity ? first : 0;
  const sessions: Session[] = groups.map((rows, index) => {
    const head = rows[0]!;
    checkSessionModes(rows);
    const turns = rows.map((l, k): Turn => {
      const piece = l.verbatim ? textPiece(verbatimText(l.verbatim), l.inputLength) : l.textInput !== null ? textPiece(l.textInput, l.inputLength) : tracePiece(l, blockTokens, block, (salt ^ ~l.line) | 0);
      return { ...piece, maxTokens: l.outputLength, delayMs: k === 0 ? 0 : (l.delayMs ?? 0), ...(k > 0 && l.timestampMs !== null && { atMs: l.timestampMs - offset }), ...(l.verbatim && { verbatim: l.verbatim }), ...(l.extra && { extra: l.extra }) };
    });
    return { index, system: null, turns, timestampMs: head.timestampMs === null ? null : head.timestampMs - offset };
  });
  return { kind: 'trace', sessions };
}

/** AIPerf's rule: a session's rows are all `messages`, all `payload`, or all synthesized (input_length/text_input). */
function checkSessionModes(rows: readonly TraceLine[]): void {
  const kinds = new Set(rows.map((l) => l.verbatim?.kind ?? 'synthesized'));
  if (kinds.size > 1) {
    throw new TailgateError('CONFIG_INVALID', `trace line ${rows[0]!.line}: session ${JSON.stringify(rows[0]!.sessionId)} mixes ${[...kinds].join(' and ')} rows; AIPerf refuses a session that mixes modes too`);
  }
}

/** A line's prompt, composed on demand from the cached blocks (a trace's prompts are not all kept). */
function tracePiece(l: TraceLine, blockTokens: number, block: (id: number) => Block, fillSeed: number): Piece {
  const n = l.inputLength;
  const fromBlocks = Math.min(n, l.hashIds.length * blockTokens);
  const fill = n - fromBlocks;
  const lastBlock = Math.ceil(fromBlocks / blockTokens);
  const fillWords = (): string[] => (fill > 0 ? randomWords(fillSeed, fill) : []);
  return {
    tokens: n,
    text: () => {
      const words: string[] = [];
      for (let b = 0; b < lastBlock; b++) {
        const w = block(l.hashIds[b]!).words;
        const take = Math.min(blockTokens, fromBlocks - b * blockTokens);
        for (let i = 0; i < take; i++) words.push(w[i]!);
      }
      return [...words, ...fillWords()].join(' ');
    },
    tokenIds: () => {
      const parts: Uint32Array[] = [];
      for (let b = 0; b < lastBlock; b++) {
        parts.push(block(l.hashIds[b]!).ids.subarray(0, Math.min(blockTokens, fromBlocks - b * blockTokens)));
      }
      if (fill > 0) parts.push(promptTokenIds(fillWords().join(' ')));
      return parts.length === 0 ? new Uint32Array(0) : concatIds(parts);
    },
  };
}

/**
 * The sessions a replay sends: those with a timestamp, the earliest `count` of them, in time order
 * (a trace file need not be sorted).
 *
 * @example
 * timedSessions(workload.sessions, 100)[0]!.timestampMs; // the smallest timestamp
 */
export function timedSessions(sessions: readonly Session[], count: number): Session[] {
  const timed = sessions.filter((s) => s.timestampMs !== null);
  timed.sort((a, b) => a.timestampMs! - b.timestampMs!);
  return timed.slice(0, count);
}
