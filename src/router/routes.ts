import type { EndpointKind } from '../openai/index.js';

/**
 * The routes the router forwards to a worker (POST): vLLM's OpenAI-compatible server's, as its
 * docs list them (docs.vllm.ai, serving/online_serving: OpenAI, Anthropic, Cohere APIs and the
 * tokenizer, pooling, classify, score and rerank routes). Anything else is never sent on.
 */
const FORWARDED: ReadonlyMap<string, EndpointKind | 'other'> = new Map<string, EndpointKind | 'other'>([
  ['/v1/chat/completions', 'chat'],
  ['/v1/completions', 'completions'],
  ...[
    '/v1/embeddings', '/v1/responses', '/v1/audio/transcriptions', '/v1/audio/translations', '/v1/messages', '/v1/messages/count_tokens',
    '/v1/chat/completions/batch', '/v2/embed', '/tokenize', '/detokenize', '/pooling', '/classify', '/score', '/v1/score',
    '/rerank', '/v1/rerank', '/v2/rerank', '/invocations',
  ].map((p) => [p, 'other'] as const),
]);

/** What the router answers itself on GET: open ones (probes), the API's, and the admin ones. */
const OPEN_GET = new Set(['/health', '/ready', '/live']);
/** Internal worker URLs and tenant names: never on the public door. */
const ADMIN_GET = new Set(['/workers', '/flows']);

/** Where a request goes, once its path is normalised. */
export type Route =
  | { to: 'worker'; path: string; kind: EndpointKind | 'other' }
  | { to: 'router'; path: string; access: 'open' | 'api' | 'admin' | 'metrics' }
  | { to: 'none'; path: string; status: 404 | 405 | 400; message: string };

/**
 * The path a request names with its dot segments resolved and its percent-encoding decoded (RFC
 * 3986 5.2.4, as nginx normalises before matching locations); null when it cannot be one path:
 * bad encoding, an encoded `/` or `\`, a backslash, a control byte, or `..` above the root.
 *
 * @example normalizePath('/v1/../admin/faults') // '/admin/faults'
 * @example normalizePath('/v1/%2e%2e/admin') // '/admin'
 */
export function normalizePath(raw: string): string | null {
  if (!raw.startsWith('/') || /%(?:2f|5c)|\\/i.test(raw)) return null;
  // the usual path has nothing to decode or resolve
  if (!/%|\/\.|\/\//.test(raw)) return raw;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(decoded)) return null;
  const out: string[] = [];
  const segments = decoded.split('/').slice(1);
  for (const [i, seg] of segments.entries()) {
    const last = i === segments.length - 1;
    if (seg === '..') {
      if (out.length === 0) return null;
      out.pop();
      if (last) out.push('');
    } else if (seg === '.') {
      if (last) out.push('');
    } else if (seg !== '' || last) out.push(seg);
  }
  return `/${out.join('/')}`;
}

/** The route of a request line: the worker route or the router's own answer, or why neither. */
export function routeOf(method: string | undefined, url: string): Route {
  const q = url.indexOf('?');
  const path = normalizePath(q < 0 ? url : url.slice(0, q));
  if (path === null) return { to: 'none', path: '', status: 400, message: 'the request path is not a valid path' };
  const kind = FORWARDED.get(path);
  if (kind !== undefined) {
    if (method !== 'POST') return { to: 'none', path, status: 405, message: `use POST for ${path}` };
    return { to: 'worker', path: q < 0 ? path : path + url.slice(q), kind };
  }
  const access = OPEN_GET.has(path) ? 'open' : ADMIN_GET.has(path) ? 'admin' : path === '/metrics' ? 'metrics' : path === '/v1/models' ? 'api' : undefined;
  if (access === undefined) return { to: 'none', path, status: 404, message: `no route for ${method ?? 'GET'} ${path}` };
  if (method !== 'GET' && method !== 'HEAD') return { to: 'none', path, status: 405, message: `method ${method} not allowed on ${path}` };
  return { to: 'router', path, access };
}
