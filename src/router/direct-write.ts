import { writeSync } from 'node:fs';
import type { Socket } from 'node:net';

/** The descriptor of a connected socket, or -1 (none exposed on this platform or socket type). */
export function socketFd(s: Socket): number {
  // a TLS socket's descriptor carries ciphertext
  if ((s as { encrypted?: boolean }).encrypted === true) return -1;
  // net.Socket keeps its descriptor on the undocumented `_handle` (a TCP wrap's `fd`)
  const fd = (s as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === 'number' ? fd : -1;
}

/**
 * Writes `buf[start, end)` with one write(2) on a socket's descriptor, bypassing the stream machinery (a
 * WriteWrap, a callback and a tick per write); returns the bytes written, 0 when the kernel took
 * none or failed (the caller then writes the rest through the stream, which reports any error the
 * usual way). Call it only while the socket is open (its descriptor is not reused) and nothing is
 * queued in its stream (so the order of bytes holds).
 */
export function writeDirect(fd: number, buf: Buffer, start: number, end: number): number {
  try {
    return writeSync(fd, buf, start, end - start);
  } catch {
    return 0;
  }
}

/** What `ServerResponse` keeps of its head until it sends it (Node's `OutgoingMessage` internals). */
interface PendingHead {
  _header?: string | null;
  _headerSent?: boolean;
  chunkedEncoding?: boolean;
}

/**
 * The head `res.writeHead()` stored but has not sent yet, as bytes, or null. With
 * {@link markHeadSent} a relay sends it in one write with the first body bytes (one syscall,
 * no stream write, where `flushHeaders()` then a body write take two).
 */
export function unsentHead(res: object): Buffer | null {
  const r = res as PendingHead;
  return typeof r._header === 'string' && r._headerSent === false ? Buffer.from(r._header, 'latin1') : null;
}

/** The caller wrote the head {@link unsentHead} gave it: the response must not send it again. */
export function markHeadSent(res: object): void {
  (res as PendingHead)._headerSent = true;
}

/** The last chunk of a chunked body with no trailer. */
export const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

/**
 * The caller wrote a chunked response's last chunk itself ({@link LAST_CHUNK}): `res.end()` must
 * only finish the response (it writes nothing more once the head is sent and nothing is queued).
 */
export function markLastChunkSent(res: object): void {
  (res as PendingHead).chunkedEncoding = false;
}
