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
