// A loopback stand-in for the Hugging Face hub's file URLs (`/<repo>/resolve/<revision>/<file>`),
// answering HEAD and GET with the headers `huggingface_hub` reads: X-Repo-Commit, ETag (the git
// blob sha1) or, for a file served through the CDN, a 302 with X-Linked-Etag (its sha256);
// X-Error-Code on refusals (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo), 401 to an
// anonymous caller for a missing or gated repo, as the hub does. Every request is logged.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback.js';

/** One repository the stand-in serves. */
export interface HubRepo {
  /** The 40-hex commit `main` points at. */
  commit: string;
  files: Record<string, string | Buffer>;
  /** Gated: only this bearer token may read it. */
  token?: string;
  /** Files answered with a redirect to the CDN path, as LFS files are. */
  lfs?: string[];
}

/** A request the stand-in answered, as logged. */
export interface HubRequest {
  method: string;
  path: string;
  authorization: string | null;
}

/** The running stand-in: its base URL (an `HF_ENDPOINT`), its request log, and `close()`. */
export interface HubServer {
  url: string;
  requests: HubRequest[];
  close(): Promise<void>;
}

const gitSha1 = (b: Buffer): string => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Starts the stand-in on 127.0.0.1, port 0. */
export async function startHub(repos: Record<string, HubRepo>): Promise<HubServer> {
  const requests: HubRequest[] = [];
  const blobs = new Map<string, Buffer>();
  // Known once listening; the handler reads it for the CDN redirects.
  let url = '';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    const authorization = req.headers.authorization ?? null;
    requests.push({ method: req.method ?? 'GET', path, authorization });
    const send = (status: number, headers: Record<string, string>, body?: Buffer): void => {
      res.writeHead(status, { ...headers, ...(body && { 'content-length': String(body.length) }) });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const fail = (status: number, code: string, extra: Record<string, string> = {}): void => send(status, { 'x-error-code': code, ...extra }, Buffer.from(`{"error":"${code}"}`));

    if (path.startsWith('/cdn/')) {
      const blob = blobs.get(path.slice(5));
      return blob ? send(200, { etag: `"${path.slice(5)}"` }, blob) : send(404, {});
    }
    const at = path.indexOf('/resolve/');
    if (at < 0) return send(404, {});
    const repo = repos[path.slice(1, at)];
    const [rawRev, ...fileParts] = path.slice(at + '/resolve/'.length).split('/');
    const token = authorization?.replace(/^Bearer /, '') ?? null;
    if (!repo) return token ? fail(404, 'RepoNotFound') : fail(401, 'RepoNotFound');
    if (repo.token !== undefined && token !== repo.token) return fail(token ? 403 : 401, 'GatedRepo');
    const rev = decodeURIComponent(rawRev ?? '');
    if (rev !== 'main' && rev !== repo.commit) return fail(404, 'RevisionNotFound');
    const file = repo.files[decodeURIComponent(fileParts.join('/'))];
    const commitHeader = { 'x-repo-commit': repo.commit };
    if (file === undefined) return fail(404, 'EntryNotFound', commitHeader);
    const body = Buffer.from(file);
    if (repo.lfs?.includes(fileParts.join('/'))) {
      const oid = sha256(body);
      blobs.set(oid, body);
      return send(302, { ...commitHeader, location: `${url}/cdn/${oid}`, 'x-linked-etag': `"${oid}"`, 'x-linked-size': String(body.length) });
    }
    send(200, { ...commitHeader, etag: `"${gitSha1(body)}"`, 'content-type': 'application/json' }, body);
  });
  const up = await listenOnLoopback(server);
  url = up.url;
  return { url, requests, close: up.close };
}
