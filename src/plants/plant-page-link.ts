/**
 * The RFC 8288 `Link` to the next page, a reference holding only a query (`<?limit=...>`):
 * resolved against the request's URL, it stays right behind an ingress or a path prefix,
 * where an absolute URL built from untrusted Host headers would not.
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
