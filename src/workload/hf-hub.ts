import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, copyFileSync, rmSync, writeFileSync, lstatSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';

/**
 * Where and how to reach the Hugging Face hub, read from the environment as `huggingface_hub` reads
 * it (its `constants.py`): `HF_HOME` (default `$XDG_CACHE_HOME/huggingface`, else
 * `~/.cache/huggingface`), `HF_HUB_CACHE` (default `$HF_HOME/hub`), `HF_ENDPOINT` (default
 * https://huggingface.co), `HF_TOKEN` (else the token file `hf auth login` writes), and
 * `HF_HUB_OFFLINE` (1/ON/YES/TRUE: never download).
 */
export interface HubSettings {
  cacheDir: string;
  endpoint: string;
  token: string | null;
  offline: boolean;
  /** @default 10000 for the metadata request; the download gets six times as long */
  timeoutMs: number;
}

const TRUE_VALUES = new Set(['1', 'ON', 'YES', 'TRUE']);

/** {@link HubSettings} from an environment (default `process.env`). */
export function hubSettings(env: NodeJS.ProcessEnv = process.env): HubSettings {
  const hfHome = env['HF_HOME'] || join(env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'huggingface');
  const tokenFile = env['HF_TOKEN_PATH'] || join(hfHome, 'token');
  let token = env['HF_TOKEN'] || env['HUGGING_FACE_HUB_TOKEN'] || null;
  if (token === null && existsSync(tokenFile)) token = readFileSync(tokenFile, 'utf8').trim() || null;
  const isTrue = (v: string | undefined): boolean => v !== undefined && TRUE_VALUES.has(v.toUpperCase());
  return {
    cacheDir: env['HF_HUB_CACHE'] || env['HUGGINGFACE_HUB_CACHE'] || join(hfHome, 'hub'),
    endpoint: (env['HF_ENDPOINT'] || 'https://huggingface.co').replace(/\/+$/, ''),
    token,
    offline: isTrue(env['HF_HUB_OFFLINE'] || env['TRANSFORMERS_OFFLINE']),
    timeoutMs: 10_000,
  };
}

/** What {@link hubSnapshot} found: the snapshot folder and how it got there, or why there is none. */
export type HubResult = { dir: string; from: 'cache' | 'download' } | { dir: null; why: string };

const COMMIT = /^[0-9a-f]{40}$/;

/**
 * A model repo's id as the hub accepts it (`huggingface_hub`'s `validate_repo_id`): `name` or
 * `org/name`, word characters, `-` and `.`, no `--` or `..`.
 */
export function isRepoId(id: string): boolean {
  return /^(?:[\w.-]+\/)?[\w.-]{1,96}$/.test(id) && !id.includes('--') && !id.includes('..') && !/(^|\/)[-.]|[-.]($|\/)/.test(id);
}

/** A branch, tag or commit that is safe as a path under `refs/`: no `..` segment, no leading `/`. */
export function isRevision(rev: string): boolean {
  return /^[\w.\-/]+$/.test(rev) && !rev.startsWith('/') && !rev.split('/').some((s) => s === '..' || s === '.' || s === '');
}

/** The repo's folder in the cache: `models--org--name`, or `datasets--org--name` for a repo given as `datasets/org/name`. */
export function repoCacheDir(cacheDir: string, repo: string): string {
  if (repo.startsWith('datasets/')) return join(cacheDir, `datasets--${repo.slice('datasets/'.length).split('/').join('--')}`);
  return join(cacheDir, `models--${repo.split('/').join('--')}`);
}

/**
 * The cached snapshot of `repo` at `revision` that holds `file`, with no request: a commit hash
 * names its `snapshots/<hash>/` folder directly, a branch or tag is read from `refs/<revision>`.
 */
export function cachedSnapshot(cacheDir: string, repo: string, revision: string, file: string): string | null {
  const root = repoCacheDir(cacheDir, repo);
  let commit = revision;
  if (!COMMIT.test(revision)) {
    const ref = join(root, 'refs', revision);
    if (!existsSync(ref)) return null;
    commit = readFileSync(ref, 'utf8').trim();
  }
  const dir = join(root, 'snapshots', commit);
  return COMMIT.test(commit) && existsSync(join(dir, file)) ? dir : null;
}

/**
 * Finds `files[0]` (required) and the rest (optional) of `repo` at `revision`: in the local cache
 * first, with no request; else (unless offline) downloaded from the hub into the cache in the
 * layout `huggingface_hub` writes (`blobs/<etag>`, `snapshots/<commit>/<file>` linking to it,
 * `refs/<revision>` holding the commit), so `transformers`, vLLM and the next run find it.
 * Failures are values: `why` is one line naming the fix (HF_TOKEN, the repo, the network).
 *
 * @example
 * const r = await hubSnapshot('Qwen/Qwen3-8B', 'main', ['tokenizer.json', 'tokenizer_config.json'], hubSettings());
 * if (r.dir !== null) loadTokenizer(r.dir);
 */
export async function hubSnapshot(repo: string, revision: string, files: readonly string[], hub: HubSettings): Promise<HubResult> {
  const [main, ...optional] = files;
  if (main === undefined) throw new Error('hubSnapshot needs a file');
  const cached = cachedSnapshot(hub.cacheDir, repo, revision, main);
  if (cached !== null) return { dir: cached, from: 'cache' };
  if (hub.offline) return { dir: null, why: `not in the Hugging Face cache (${hub.cacheDir}) and HF_HUB_OFFLINE is set` };
  const first = await download(repo, revision, main, hub);
  if ('why' in first) return { dir: null, why: first.why };
  for (const f of optional) await download(repo, first.commit, f, hub);
  return { dir: join(repoCacheDir(hub.cacheDir, repo), 'snapshots', first.commit), from: 'download' };
}

type Fetched = { commit: string } | { why: string };

/** One file into the cache, as `hf_hub_download` does: metadata (HEAD), then the bytes (GET). */
async function download(repo: string, revision: string, file: string, hub: HubSettings): Promise<Fetched> {
  const url = `${hub.endpoint}/${repo}/resolve/${encodeURIComponent(revision)}/${file}`;
  const auth: Record<string, string> = hub.token ? { authorization: `Bearer ${hub.token}` } : {};
  const root = repoCacheDir(hub.cacheDir, repo);
  try {
    let head = await fetch(url, { method: 'HEAD', headers: auth, redirect: 'manual', signal: AbortSignal.timeout(hub.timeoutMs) });
    // A renamed repo answers with a relative redirect to its new name: follow those (and only those) for the metadata.
    for (let hops = 0; hops < 5 && isRedirect(head.status) && isRelative(head.headers.get('location')); hops++) {
      head = await fetch(new URL(head.headers.get('location')!, head.url || url), { method: 'HEAD', headers: auth, redirect: 'manual', signal: AbortSignal.timeout(hub.timeoutMs) });
    }
    const commitHeader = head.headers.get('x-repo-commit');
    if (head.status >= 400) {
      if (head.status === 404 && head.headers.get('x-error-code') === 'EntryNotFound' && commitHeader && COMMIT.test(commitHeader)) {
        // Remember the absence, as huggingface_hub does, so a later load does not ask again.
        mkdirSync(join(root, '.no_exist', commitHeader), { recursive: true });
        writeFileSync(join(root, '.no_exist', commitHeader, file), '');
      }
      return { why: refusal(head.status, head.headers.get('x-error-code'), repo, revision, file, url, hub.token !== null) };
    }
    const commit = commitHeader ?? (COMMIT.test(revision) ? revision : null);
    if (commit === null || !COMMIT.test(commit)) return { why: `${url} answered without an X-Repo-Commit header (is HF_ENDPOINT a Hugging Face hub?)` };
    const etag = normalizeEtag(head.headers.get('x-linked-etag') ?? head.headers.get('etag'));
    // Large (LFS) files redirect to a CDN: fetch that address directly, without the token.
    const location = isRedirect(head.status) ? head.headers.get('location') : null;
    const target = location ? new URL(location, url).href : url;
    const res = await fetch(target, { headers: location ? {} : auth, signal: AbortSignal.timeout(hub.timeoutMs * 6) });
    if (!res.ok) return { why: `${target} answered HTTP ${res.status}` };
    const bytes = Buffer.from(await res.arrayBuffer());
    try {
      store(root, revision, commit, file, etag ?? `sha-${randomUUID()}`, bytes);
    } catch (e) {
      return { why: `cannot write the Hugging Face cache ${hub.cacheDir} (${e instanceof Error ? e.message : String(e)}); set HF_HUB_CACHE to a writable folder` };
    }
    return { commit };
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause.message : e instanceof Error ? e.message : String(e);
    return { why: `cannot reach ${hub.endpoint} (${cause})` };
  }
}

function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

function isRelative(location: string | null): boolean {
  return location !== null && location.startsWith('/') && !location.startsWith('//');
}

/** `W/"abc"` and `"abc"` become `abc`; anything that is not a safe file name is dropped. */
function normalizeEtag(etag: string | null): string | null {
  if (etag === null) return null;
  const v = etag.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
  return /^[\w.-]+$/.test(v) && v !== '.' && v !== '..' ? v : null;
}

function refusal(status: number, code: string | null, repo: string, revision: string, file: string, url: string, hasToken: boolean): string {
  if (code === 'RevisionNotFound') return `revision ${revision} not found in ${repo} (HTTP ${status})`;
  if (code === 'EntryNotFound') return `${repo} has no ${file} at ${revision} (HTTP ${status})`;
  if (status === 401 || status === 403) {
    return hasToken
      ? `the hub refused ${url} (HTTP ${status}): the token in HF_TOKEN has no access to ${repo} (a gated repo needs its terms accepted), or the repo does not exist`
      : `the hub refused ${url} (HTTP ${status}): ${repo} is gated, private or missing; set HF_TOKEN to a token with access`;
  }
  if (status === 404) return `repo ${repo} or its ${file} not found (HTTP 404 for ${url})`;
  return `the hub answered HTTP ${status} for ${url}`;
}

/** Writes the blob (atomically), the snapshot's link to it and the revision's ref. */
function store(root: string, revision: string, commit: string, file: string, etag: string, bytes: Buffer): void {
  const blob = join(root, 'blobs', etag);
  const pointer = join(root, 'snapshots', commit, file);
  mkdirSync(dirname(blob), { recursive: true });
  mkdirSync(dirname(pointer), { recursive: true });
  const tmp = `${blob}.${randomUUID()}.incomplete`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, blob);
  if (existsOrLink(pointer)) rmSync(pointer);
  try {
    symlinkSync(relative(dirname(pointer), blob), pointer);
  } catch {
    copyFileSync(blob, pointer); // a file system without symlinks: a copy, as huggingface_hub falls back to
  }
  if (revision !== commit) {
    mkdirSync(dirname(join(root, 'refs', revision)), { recursive: true });
    writeFileSync(join(root, 'refs', revision), commit);
  }
}

function existsOrLink(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
