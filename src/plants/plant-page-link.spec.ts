import { describe, expect, it } from 'vitest';
import { nextPageLink } from './plant-page-link.js';

describe('nextPageLink', () => {
  it('keeps the limit the client asked for and resolves against the request URL', () => {
    const link = nextPageLink(1000, 'AAAAAAAAAAo');
    expect(link).toBe('<?limit=1000&cursor=AAAAAAAAAAo>; rel="next"');
    const target = /^<([^>]*)>; rel="next"$/.exec(link)![1]!;
    expect(new URL(target, 'https://store.example/api/plants?limit=1000').href).toBe(
      'https://store.example/api/plants?limit=1000&cursor=AAAAAAAAAAo',
    );
  });

  it('leaves limit out when the client left it out', () => {
    expect(nextPageLink(undefined, '_-_-_-_-_-8')).toBe('<?cursor=_-_-_-_-_-8>; rel="next"');
  });
});
