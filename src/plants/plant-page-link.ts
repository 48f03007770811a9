/**
 * The RFC 8288 `Link` header of a page that has a next one, as GitHub's API pages its arrays:
 * the body stays the upstream document's bare array, and the position travels in the header.
 *
 * The target is a relative reference holding only a query (`<?limit=20&cursor=...>`). RFC 8288
 * resolves it against the request's URL (RFC 3986 section 5.4: same scheme, host and path), so
 * it stays right behind a TLS-terminating ingress or a path prefix, which an absolute URL built
 * from the request's Host and protocol would get wrong (the service does not trust forwarded
 * headers). Clients resolve it with `new URL(target, requestUrl)`.
 */
export function nextPageLink(limit: number | undefined, cursor: string): string {
  const query = new URLSearchParams();
  if (limit !== undefined) query.set('limit', String(limit));
  query.set('cursor', cursor);
  return `<?${query.toString()}>; rel="next"`;
}

/** The `Link` header as the API document describes it (also an example for Swagger UI). */
export const LINK_HEADER_DOC = {
  description:
    'RFC 8288 link to the next page, `<?limit=...&cursor=...>; rel="next"`, relative to the ' +
    'request URL; absent on the last page. The cursor is opaque: pass it back unchanged.',
  schema: { type: 'string', example: '<?limit=20&cursor=AAAAAAAAAAo>; rel="next"' },
} as const;
