import { createServer, type Server as HttpServer, type ServerOptions } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { TailgateError } from '../core/index.js';
import { ROUTER_DEFAULTS } from '../routing/index.js';
import type { RouterOptions } from './options.js';
import type { RequestHandler, Side } from './request-handler.js';

/** A listening server and the URL it answers at. */
export interface Listener {
  readonly server: HttpServer;
  readonly url: string;
  readonly port: number;
}

/** A TCP port 0..65535, else a one-line CONFIG_INVALID (Node would throw a RangeError at listen). */
export function checkPort(port: number, flag: string): number {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TailgateError('CONFIG_INVALID', `${flag} ${port} is not a port (0 to 65535)`);
  return port;
}

/** The client-facing timeouts of both listeners (nginx's names in the options' docs). */
function serverOptions(opts: RouterOptions): ServerOptions {
  return {
    noDelay: true,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? ROUTER_DEFAULTS.keepAliveTimeoutMs,
    headersTimeout: opts.headerTimeoutMs ?? ROUTER_DEFAULTS.headerTimeoutMs,
    // the body has a timeout of its own between two reads (readBody), as nginx's client_body_timeout
    requestTimeout: 0,
    // Node checks the header timeout on an interval of its own (30 s by default): check every second
    connectionsCheckingInterval: 1000,
  };
}

/**
 * Creates the server of one side: plain HTTP, or TLS toward clients (the API side only) with a
 * handshake that must finish within the header timeout (Node's own default holds a silent socket 120 s).
 */
export function createSideServer(opts: RouterOptions, handler: RequestHandler, side: Side): HttpServer {
  const base = serverOptions(opts);
  const tls = side === 'api' ? opts.tls : undefined;
  let server: HttpServer;
  if (tls) {
    try {
      server = createHttpsServer({ ...base, cert: tls.cert, key: tls.key, handshakeTimeout: opts.tlsHandshakeTimeoutMs ?? opts.headerTimeoutMs ?? ROUTER_DEFAULTS.headerTimeoutMs }, handler.listener(side));
    } catch (e) {
      throw new TailgateError('CONFIG_INVALID', `the TLS certificate and key do not load: ${(e as Error).message}`, { cause: e });
    }
  } else server = createServer(base, handler.listener(side));
  server.on('checkContinue', handler.checkContinue(side));
  server.maxRequestsPerSocket = opts.maxRequestsPerConnection ?? ROUTER_DEFAULTS.maxRequestsPerConnection;
  return server;
}

/** Listens on `host:port`; a busy or forbidden address is a one-line CONFIG_INVALID. */
export async function listen(server: HttpServer, port: number, host: string, scheme: 'http' | 'https'): Promise<Listener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new TailgateError('CONFIG_INVALID', `cannot listen on ${host}:${port}: ${e.message}`, { cause: e })));
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { server, url: `${scheme}://${h}:${addr.port}`, port: addr.port };
}
