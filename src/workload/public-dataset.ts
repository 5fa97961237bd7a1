import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TailgateError } from '../core/index.js';
import { hubSettings, hubSnapshot, type HubSettings } from './hf-hub.js';
import { textPiece, type Session } from './session.js';
import type { Tokenizer } from './tokenizer.js';

/** AIPerf's ShareGPT: the Hugging Face dataset repo and file its loader reads. */
export const SHAREGPT = {
  repo: 'datasets/anon8231489123/ShareGPT_Vicuna_unfiltered',
  file: 'ShareGPT_V3_unfiltered_cleaned_split.json',
  /** AIPerf's own download cache, relative to the working directory. */
  aiperfCache: join('.cache', 'aiperf', 'datasets'),
} as const;

/** Where {@link resolveShareGpt} found the file. */
export interface PublicDatasetFile {
  path: string;
  from: 'aiperf-cache' | 'hub-cache' | 'download';
}

/**
 * Finds ShareGPT's file: AIPerf's cache (`.cache/aiperf/datasets/`, what `aiperf profile
 * --public-dataset sharegpt` left in this folder), else the Hugging Face cache, else a download
 * from `HF_ENDPOINT` into that cache (as `huggingface_hub` lays it out). Offline (`HF_HUB_OFFLINE`)
 * or unreachable with no copy: one error naming where to put the file; never a synthetic run.
 *
 * @throws TailgateError CONFIG_INVALID
 */
export async function resolveShareGpt(cwd = process.cwd(), hub: HubSettings = hubSettings()): Promise<PublicDatasetFile> {
  const local = join(cwd, SHAREGPT.aiperfCache, SHAREGPT.file);
  if (existsSync(local)) return { path: local, from: 'aiperf-cache' };
  const r = await hubSnapshot(SHAREGPT.repo, 'main', [SHAREGPT.file], hub);
  if (r.dir === null) {
    throw new TailgateError('CONFIG_INVALID', `--public-dataset sharegpt: no copy of ${SHAREGPT.file} (${r.why}); put it in ${join(SHAREGPT.aiperfCache, SHAREGPT.file)} or the Hugging Face cache, or let bench download it (HF_ENDPOINT)`);
  }
  return { path: join(r.dir, SHAREGPT.file), from: r.from === 'cache' ? 'hub-cache' : 'download' };
}

/** AIPerf's length filter, vLLM's: prompt 4-1024 tokens, answer >= 4 (unless --osl is given), both <= 2048. */
function validLengths(prompt: number, output: number, checkOutput: boolean): boolean {
  return prompt >= 4 && prompt <= 1024 && (!checkOutput || output >= 4) && prompt + output <= 2048;
}

/** AIPerf's pairing: each `human` message followed by a `gpt` one is a turn; without roles, the first two values. */
function pairsOf(conversations: unknown): Array<[string, string]> {
  const msgs = Array.isArray(conversations) ? conversations.filter((c): c is Record<string, unknown> => c !== null && typeof c === 'object') : [];
  if (msgs.length < 2) return [];
  const text = (m: Record<string, unknown> | undefined): string => (typeof m?.['value'] === 'string' ? m['value'] : '');
  if (!msgs.some((m) => m['from'] === 'human' || m['from'] === 'gpt')) {
    const [p, c] = [text(msgs[0]), text(msgs[1])];
    return p && c ? [[p, c]] : [];
  }
  const roles = msgs.filter((m) => m['from'] === 'human' || m['from'] === 'gpt');
  const out: Array<[string, string]> = [];
  for (let i = 0; i < roles.length - 1; ) {
    if (roles[i]!['from'] === 'human' && roles[i + 1]!['from'] === 'gpt') {
      const [p, c] = [text(roles[i]), text(roles[i + 1])];
      if (p && c) out.push([p, c]);
      i += 2;
    } else i++;
  }
  return out;
}

/**
 * ShareGPT's entries as AIPerf turns them into conversations: every human->gpt pair a turn asking
 * for as many tokens as the recorded answer has; an entry with any pair outside the length filter
 * is dropped whole. Lengths are counted by `tokenizer` (the model's, as AIPerf counts them).
 *
 * @throws TailgateError CONFIG_INVALID (not ShareGPT's JSON, or nothing left after the filter)
 */
export function shareGptSessions(text: string, source: string, tokenizer: Tokenizer, oslGiven: boolean): Session[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new TailgateError('CONFIG_INVALID', `${source} is not JSON (ShareGPT's file is a JSON list of entries with "conversations")`);
  }
  if (!Array.isArray(data)) throw new TailgateError('CONFIG_INVALID', `${source}: expected a JSON list of ShareGPT entries`);
  const sessions: Session[] = [];
  for (const entry of data as Array<Record<string, unknown> | null>) {
    const pairs = pairsOf(entry?.['conversations']);
    if (pairs.length === 0) continue;
    const turns = [];
    for (const [prompt, completion] of pairs) {
      const p = tokenizer.count(prompt);
      const c = tokenizer.count(completion);
      if (!validLengths(p, c, !oslGiven)) break;
      turns.push({ ...textPiece(prompt, p), maxTokens: c, delayMs: 0 });
    }
    if (turns.length !== pairs.length) continue;
    sessions.push({ index: sessions.length, system: null, turns, timestampMs: null });
  }
  if (sessions.length === 0) throw new TailgateError('CONFIG_INVALID', `${source}: no ShareGPT entry passed AIPerf's length filter (prompt 4-1024 tokens, answer >= 4, both <= 2048)`);
  return sessions;
}

/** Reads ShareGPT (see {@link resolveShareGpt}) and turns it into sessions (see {@link shareGptSessions}). */
export async function loadShareGpt(tokenizer: Tokenizer, oslGiven: boolean, cwd?: string, hub?: HubSettings): Promise<{ sessions: Session[]; file: PublicDatasetFile }> {
  const file = await resolveShareGpt(cwd, hub);
  return { sessions: shareGptSessions(readFileSync(file.path, 'utf8'), file.path, tokenizer, oslGiven), file };
}
