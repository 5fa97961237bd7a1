import { vocabWord } from '../src/core/index.js';

/** A whole OpenAI SSE body read back into what the tests assert on. */
export interface SseRead {
  raw: string;
  /** The `data:` payloads in order, `[DONE]` included. */
  payloads: string[];
  /** Choice 0's content (chat `delta.content` or completions `text`). */
  text: string;
  /** Content per choice index. */
  texts: string[];
  ids: Set<string>;
  /** The last `usage` object seen. */
  usage: unknown;
  /** How many `[DONE]` frames. */
  done: number;
  /** The message of each error frame. */
  errors: string[];
  /** Frames whose choice 0 carries `delta.role` (a chat stream has one). */
  roles: number;
}

export function readSse(raw: string): SseRead {
  const out: SseRead = { raw, payloads: [], text: '', texts: [], ids: new Set(), usage: null, done: 0, errors: [], roles: 0 };
  for (const ev of raw.split('\n\n')) {
    if (!ev.startsWith('data: ')) continue;
    const data = ev.slice(6);
    out.payloads.push(data);
    if (data === '[DONE]') {
      out.done++;
      continue;
    }
    const o = JSON.parse(data) as { id?: string; error?: { message: string }; usage?: unknown; choices?: { index?: number; delta?: { role?: string; content?: string }; text?: string }[] };
    if (o.error) out.errors.push(o.error.message);
    if (o.id) out.ids.add(o.id);
    if (o.usage) out.usage = o.usage;
    for (const c of o.choices ?? []) {
      const i = c.index ?? 0;
      if (i === 0 && c.delta?.role !== undefined) out.roles++;
      out.texts[i] = (out.texts[i] ?? '') + (c.delta?.content ?? c.text ?? '');
    }
  }
  out.text = out.texts[0] ?? '';
  return out;
}

/** The fleet's output text for tokens [from, from + n): each vocabulary word with a leading space. */
export function words(n: number, from = 0): string {
  return Array.from({ length: n }, (_, i) => ` ${vocabWord(from + i)}`).join('');
}
