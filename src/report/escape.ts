const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML/XML element content and attribute values. */
export function escapeXml(text: string): string {
  // Characters XML 1.0 forbids even when escaped are dropped, so JUnit parsers never choke.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** A number for people: thousands separators, at most `digits` decimals. */
export function formatNumber(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'n/a' : String(value);
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
