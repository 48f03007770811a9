/**
 * A peer's value for a log line: a string cut to `max` characters (never a whole frame), a
 * scalar as is, and only the kind of anything else (serializing it could cost as much as the
 * frame itself, or throw).
 */
export function truncateForLog(value: unknown, max = 200): string {
  if (typeof value === 'string') {
    return value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value;
  }
  if (value === null || ['number', 'boolean', 'undefined'].includes(typeof value)) {
    return String(value);
  }
  return Array.isArray(value) ? '<array>' : `<${typeof value}>`;
}
