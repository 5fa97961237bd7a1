import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A test server listening on 127.0.0.1 at a port of its own. */
export interface LoopbackServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Closes the server and its kept-alive connections (a plain close() waits for them to idle out). */
  close(): Promise<void>;
}

/**
 * Starts `server` on 127.0.0.1, port 0.
 *
 * @example const up = await listenOnLoopback(createServer(handler)); t.after(() => up.close());
 */
export async function listenOnLoopback(server: Server): Promise<LoopbackServer> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
