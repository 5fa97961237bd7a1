import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { LAST_CHUNK, markHeadSent, markLastChunkSent, socketFd, unsentHead, writeDirect } from './direct-write.js';

// The relay's fast path leans on Node internals (`_handle.fd`, `_header`, `_headerSent`, `chunkedEncoding`);
// when one is renamed it falls back to stream writes without a word, and the bytes on the wire stay right.
// This pins that on this Node the fast path is the one taken, and that the response then sends nothing twice.
test('direct write: on this Node a response\'s head goes out with its first body bytes in one write(2), and end() adds nothing', async (t) => {
  const seen: { fd: number; head: string | null; wrote: number[] } = { fd: -1, head: null, wrote: [] };
  const chunk = Buffer.from('7\r\ndata: x\r\n', 'latin1');
  const server = createServer((_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    seen.fd = socketFd(res.socket!);
    const head = unsentHead(res);
    seen.head = head?.toString('latin1') ?? null;
    if (head === null || seen.fd < 0) {
      res.end('fallback');
      return;
    }
    markHeadSent(res);
    const first = Buffer.concat([head, chunk]);
    seen.wrote.push(writeDirect(seen.fd, first, 0, first.length) - first.length, writeDirect(seen.fd, LAST_CHUNK, 0, LAST_CHUNK.length) - LAST_CHUNK.length);
    markLastChunkSent(res);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const wire = await new Promise<string>((resolve, reject) => {
    const s = connect((server.address() as AddressInfo).port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'));
    const parts: Buffer[] = [];
    s.on('data', (b: Buffer) => parts.push(b)).on('error', reject).on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
  });
  assert.ok(seen.fd >= 0, 'the socket exposes its descriptor');
  assert.match(seen.head ?? 'no head', /^HTTP\/1\.1 200 OK\r\n[^]*transfer-encoding: chunked\r\n\r\n$/i, 'writeHead() left its head unsent, as bytes');
  assert.deepEqual(seen.wrote, [0, 0], 'each write(2) took every byte');
  assert.equal(wire, `${seen.head}${chunk.toString('latin1')}${LAST_CHUNK.toString('latin1')}`, 'one head, the body, one last chunk: nothing sent twice');
});
