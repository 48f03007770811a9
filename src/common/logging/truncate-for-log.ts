/** A peer's value for a log line: a string cut, a scalar as is, anything else by its kind. */
export function truncateForLog(value: unknown, max = 200): string {
  if (typeof value === 'string') {
    return value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value;
  }
  if (value === null || ['number', 'boolean', 'undefined'].includes(typeof value)) {
    return String(value);
  }
  return Array.isArray(value) ? '<array>' : `<${typeof value}>`;
}
