import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TailgateError } from '../core/index.js';
import type { ChatTemplate, TemplateMessage, Tokenizer } from './tokenizer.js';

// AIPerf's probe texts (`_CHAT_TEMPLATE_PROBE_SAMPLES`): the overheads are averaged over them.
const PROBES = [
  'Hello, how are you today?',
  'Could you write a Python function to reverse a string?',
  "What's the difference between TCP and UDP in networking?",
] as const;

/**
 * The chat template of a loaded tokenizer, read from the `tokenizer_config.json` beside its
 * `tokenizer.json` (with its `bos_token` and `eos_token`), or null when it has none (AIPerf then
 * counts the bare text). Loads `@huggingface/jinja` on first use only.
 *
 * @throws TailgateError CONFIG_INVALID when the template does not parse or render
 * @example
 * const t = await loadChatTemplate(await loadTokenizer('test/fixtures/tiny-bpe-chatml'));
 * t?.count([{ role: 'user', content: 'hi' }]);
 */
export async function loadChatTemplate(tokenizer: Tokenizer): Promise<ChatTemplate | null> {
  const config = readConfig(tokenizer);
  if (config === null) return null;
  const source = templateSource(config['chat_template']);
  if (source === null) return null;
  const { Template } = await import('@huggingface/jinja');
  const bad = (e: unknown): TailgateError => new TailgateError('CONFIG_INVALID', `--tokenizer ${tokenizer.name}: its chat_template does not render: ${e instanceof Error ? e.message : String(e)}`);
  let template: InstanceType<typeof Template>;
  try {
    template = new Template(source);
  } catch (e) {
    throw bad(e);
  }
  const specials = { bos_token: tokenText(config['bos_token']), eos_token: tokenText(config['eos_token']) };
  const render = (messages: readonly TemplateMessage[]): string => template.render({ messages: messages.map((m) => ({ ...m })), add_generation_prompt: true, ...specials });
  const count = (messages: readonly TemplateMessage[]): number => tokenizer.count(render(messages));
  try {
    return { render, count, overheads: probeOverheads(count, (s) => tokenizer.count(s)) };
  } catch (e) {
    throw bad(e);
  }
}

/**
 * AIPerf's two-equation probe: for each sample S, one message [user(S)] and three
 * [user(S), assistant(S), user(S)]; their difference is two wraps and two S, and the rest of the
 * single rendering is the per-request cost. Averaged over the samples, rounded; a negative result
 * means no compensation (0, 0), as in AIPerf.
 */
function probeOverheads(count: (m: readonly TemplateMessage[]) => number, bare: (s: string) => number): { perRequest: number; perMessage: number } {
  let fixed = 0;
  let wrap = 0;
  for (const s of PROBES) {
    const single = count([{ role: 'user', content: s }]);
    const triple = count([{ role: 'user', content: s }, { role: 'assistant', content: s }, { role: 'user', content: s }]);
    const n = bare(s);
    const w = (triple - single - 2 * n) / 2;
    const f = single - n - w;
    if (w < 0 || f < 0) return { perRequest: 0, perMessage: 0 };
    fixed += f;
    wrap += w;
  }
  return { perRequest: Math.round(fixed / PROBES.length), perMessage: Math.round(wrap / PROBES.length) };
}

function readConfig(tokenizer: Tokenizer): Record<string, unknown> | null {
  if (tokenizer.source === undefined) return null;
  const dir = statSync(tokenizer.source).isDirectory() ? tokenizer.source : dirname(tokenizer.source);
  const file = join(dir, 'tokenizer_config.json');
  if (!existsSync(file)) return null;
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    throw new TailgateError('CONFIG_INVALID', `--tokenizer ${tokenizer.name}: cannot read ${file}: not valid JSON`);
  }
}

// `chat_template` is a string, or a list of named templates of which `transformers` takes "default".
function templateSource(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const named = v.find((t: unknown) => typeof t === 'object' && t !== null && (t as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    return typeof named?.template === 'string' ? named.template : null;
  }
  return null;
}

// A special token is written as its text or as an AddedToken object with `content`.
function tokenText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return '';
}
