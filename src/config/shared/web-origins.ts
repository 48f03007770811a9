/** `CORS_ORIGINS` and `RELAY_ALLOWED_ORIGINS`: off (unset), `*`, or comma-separated origins. */
export type CorsOrigins = 'off' | '*' | string[];

export const CORS_ORIGINS_MESSAGE =
  'CORS_ORIGINS must be "*" or comma-separated origins such as https://app.example.com ' +
  '(scheme, host and port only)';

/** The origins, or undefined when the value is not valid (the schema reports it). */
export function parseCorsOrigins(value: string | undefined): CorsOrigins | undefined {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return 'off';
  if (entries.length === 1 && entries[0] === '*') return '*';
  return entries.every(isOrigin) ? [...new Set(entries)] : undefined;
}

/** What a browser sends in `Origin`: http(s), host, optional port, nothing else. */
function isOrigin(entry: string): boolean {
  if (!URL.canParse(entry)) return false;
  const url = new URL(entry);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === entry;
}
