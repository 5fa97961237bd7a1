import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; text: string } | { ok: false; tooLarge: true; bytes: number } | { ok: false; tooLarge: false };

/**
 * Reads a request body up to `limitBytes`. An oversized body is drained (so the client sees the
 * 413 rather than a reset) but not kept; past 16 x the limit the socket is destroyed.
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const finish = (r: BodyResult) => {
      if (done) return;
      done = true;
      resolve(r);
    };
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes <= limitBytes) chunks.push(c);
      else if (bytes > 16 * limitBytes) req.destroy();
    });
    req.on('end', () => {
      if (bytes > limitBytes) finish({ ok: false, tooLarge: true, bytes });
      else finish({ ok: true, text: Buffer.concat(chunks, bytes).toString('utf8') });
    });
    req.on('error', () => finish({ ok: false, tooLarge: false }));
    req.on('close', () => finish({ ok: false, tooLarge: false }));
  });
}
