import { existsSync } from 'node:fs';
import { TailgateError } from '../core/index.js';
import { hubSettings, hubSnapshot, isRepoId, isRevision, type HubSettings } from './hf-hub.js';
import { defaultTokenizer, loadTokenizer, type Tokenizer } from './tokenizer.js';

/** What `--tokenizer` (or, without it, the model name) asks for, decided without any request. */
export type TokenizerChoice =
  | { kind: 'words'; why: string | null }
  | { kind: 'file'; path: string }
  | { kind: 'hub'; repo: string; revision: string; label: string };

/** The files a tokenizer is made of, as `transformers` fetches them: the first is required. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

/**
 * Decides where the tokenizer comes from, as AIPerf does: `builtin` (or `words`) is the word
 * rule; a file or folder on disk is read; anything else is a Hugging Face repo id (`--tokenizer`,
 * else the model name) at `revision` (default `main`). A path-like name (`./`, `/`, `~`, `.json`)
 * that does not exist, or an unsafe revision, throws CONFIG_INVALID with one line.
 *
 * @example
 * chooseTokenizer({ model: 'Qwen/Qwen3-8B' }); // { kind: 'hub', repo: 'Qwen/Qwen3-8B', revision: 'main', ... }
 */
export function chooseTokenizer(o: { tokenizer?: string | undefined; model: string; revision?: string | undefined }): TokenizerChoice {
  const revision = o.revision ?? 'main';
  if (!isRevision(revision)) throw new TailgateError('CONFIG_INVALID', `--tokenizer-revision ${revision}: not a branch, tag or commit`);
  const tok = o.tokenizer;
  if (tok === 'builtin' || tok === 'words') return { kind: 'words', why: null };
  if (tok !== undefined && existsSync(tok)) return { kind: 'file', path: tok };
  const name = tok ?? o.model;
  const label = tok === undefined ? `model ${name}` : `--tokenizer ${name}`;
  if (isRepoId(name) && !/\.json$/i.test(name)) return { kind: 'hub', repo: name, revision, label };
  if (tok === undefined) return { kind: 'words', why: `${label}: not a Hugging Face repo id (give --tokenizer)` };
  throw new TailgateError('CONFIG_INVALID', `--tokenizer ${tok}: no such file or folder, and not a Hugging Face repo id`);
}

/**
 * Loads the chosen tokenizer. A hub id is looked up in the local Hugging Face cache first (no
 * request), then downloaded into it unless `HF_HUB_OFFLINE` is set (see {@link hubSnapshot}).
 * When nothing can be had, the word rule stands in, with `fallback` saying why in one line.
 *
 * @example
 * const t = await resolveTokenizer(chooseTokenizer({ model: 'Qwen/Qwen3-8B' }));
 * if (t.fallback) console.warn(t.fallback);
 */
export async function resolveTokenizer(choice: TokenizerChoice, hub: HubSettings = hubSettings()): Promise<Tokenizer> {
  if (choice.kind === 'file') return loadTokenizer(choice.path);
  if (choice.kind === 'words') return choice.why === null ? defaultTokenizer : { ...defaultTokenizer, fallback: choice.why };
  const found = await hubSnapshot(choice.repo, choice.revision, TOKENIZER_FILES, hub);
  if (found.dir === null) return { ...defaultTokenizer, fallback: `${choice.label}: ${found.why}` };
  return loadTokenizer(found.dir, choice.repo);
}
