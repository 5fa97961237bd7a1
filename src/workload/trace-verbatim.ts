import { TailgateError } from '../core/index.js';

/**
 * A trace row sent as written, as AIPerf's mooncake_trace loader replays it: `messages` (the whole
 * conversation so far, OpenAI chat messages, with optional `tools`) formatted as a chat request, or
 * `payload` (a complete request body) sent verbatim.
 */
export type VerbatimTurn =
  | { kind: 'messages'; messages: ReadonlyArray<Record<string, unknown>>; tools: ReadonlyArray<Record<string, unknown>> | null }
  | { kind: 'payload'; body: Readonly<Record<string, unknown>> };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text a tokenizer counts in chat messages: string contents and text parts, joined by newlines. */
function messagesText(messages: ReadonlyArray<Record<string, unknown>>): string {
  const out: string[] = [];
  for (const m of messages) {
    const c = m['content'];
    if (typeof c === 'string') out.push(c);
    else if (Array.isArray(c)) for (const p of c) if (isObject(p) && p['type'] === 'text' && typeof p['text'] === 'string') out.push(p['text']);
  }
  return out.join('\n');
}

/**
 * A verbatim turn's chat messages as a chat template reads them (role and text: string contents
 * and text parts joined by newlines), or null for a prompt payload.
 */
export function verbatimMessages(v: VerbatimTurn): { role: string; content: string }[] | null {
  const m = v.kind === 'messages' ? v.messages : Array.isArray(v.body['messages']) ? (v.body['messages'] as unknown[]).filter(isObject) : null;
  return m === null ? null : m.map((x) => ({ role: typeof x['role'] === 'string' ? x['role'] : 'user', content: messagesText([x]) }));
}

/** The prompt text of a verbatim turn (its messages' text, or a payload's messages or prompt), what ISL counts. */
export function verbatimText(v: VerbatimTurn): string {
  if (v.kind === 'messages') return messagesText(v.messages);
  const m = v.body['messages'];
  if (Array.isArray(m)) return messagesText(m.filter(isObject));
  const p = v.body['prompt'];
  return typeof p === 'string' ? p : Array.isArray(p) ? p.filter((x) => typeof x === 'string').join('\n') : '';
}

/**
 * Reads a row's `messages`/`tools`/`payload`/`extra` with AIPerf's MooncakeTrace rules: `messages`
 * is a non-empty list of objects with a `role`; `tools` only with `messages`, non-empty; `payload` a
 * non-empty object; one input mode per row (with `input_length`/`text_input`); `hash_ids` only with
 * `input_length`; `message_mode: "delta"` (AIPerf accumulates the answers into later turns) is not
 * replayed by bench and refused.
 *
 * @throws TailgateError CONFIG_INVALID, its message prefixed by `where` (`t.jsonl line 3`)
 */
export function readVerbatim(o: Record<string, unknown>, where: string): { verbatim: VerbatimTurn | null; extra: Record<string, unknown> | null } {
  const bad = (msg: string) => new TailgateError('CONFIG_INVALID', `${where}: ${msg}`);
  let extra: Record<string, unknown> | null = null;
  if (o['extra'] !== undefined && o['extra'] !== null) {
    if (!isObject(o['extra'])) throw bad('extra must be an object of body fields');
    extra = o['extra'];
  }
  const modes = ['input_length', 'text_input', 'messages', 'payload'].filter((k) => o[k] !== undefined && o[k] !== null);
  if (modes.length > 1) throw bad(`${modes.join(', ')}: one input mode per row (input_length, text_input, messages or payload), as AIPerf`);
  if (o['tools'] !== undefined && o['messages'] === undefined) throw bad('tools goes with messages only');
  if (o['hash_ids'] !== undefined && (o['messages'] !== undefined || o['payload'] !== undefined)) throw bad('hash_ids goes with input_length only');
  if (o['message_mode'] !== undefined && o['message_mode'] !== 'history') {
    if (o['message_mode'] === 'delta') throw bad('message_mode "delta" (AIPerf: each row adds messages to the history, with the answers received) is not replayed by tailgate bench; give each row the whole conversation ("history")');
    throw bad(`message_mode must be "history" or "delta" (got ${JSON.stringify(o['message_mode'])})`);
  }
  if (o['messages'] !== undefined) {
    const m = o['messages'];
    if (!Array.isArray(m) || m.length === 0) throw bad('messages must be a non-empty list');
    m.forEach((x, i) => {
      if (!isObject(x) || typeof x['role'] !== 'string') throw bad(`messages[${i}] must be an object with a role`);
    });
    let tools: Record<string, unknown>[] | null = null;
    if (o['tools'] !== undefined) {
      const t = o['tools'];
      if (!Array.isArray(t) || t.length === 0 || !t.every(isObject)) throw bad('tools must be a non-empty list of objects');
      tools = t;
    }
    return { verbatim: { kind: 'messages', messages: m as Record<string, unknown>[], tools }, extra };
  }
  if (o['payload'] !== undefined) {
    const p = o['payload'];
    if (!isObject(p) || Object.keys(p).length === 0) throw bad('payload must be a non-empty object');
    if (extra !== null) throw bad('extra with payload: a payload is sent verbatim; put the fields in the payload');
    return { verbatim: { kind: 'payload', body: p }, extra: null };
  }
  return { verbatim: null, extra };
}
