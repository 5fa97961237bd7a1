/**
 * The bytes of an HTTP/1.1 request: request line, `host`, the caller's headers (any `host` or
 * `content-length` among them replaced), `content-length`, body.
 */
export function encodeRequest(method: string, path: string, host: string, headers: Readonly<Record<string, string>>, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const k in headers) if (k !== 'host' && k !== 'content-length') head += `${k}: ${headers[k]}\r\n`;
  head += `content-length: ${b.length}\r\n\r\n`;
  // one buffer, the head written straight into it (latin1: one byte per character)
  const out = Buffer.allocUnsafe(head.length + b.length);
  out.write(head, 0, 'latin1');
  b.copy(out, head.length);
  return out;
}
