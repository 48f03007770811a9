import { describe, expect, it } from 'vitest';
import { tagOf } from './relay-cluster.service.js';

describe("a replica's tag in MRTR request states", () => {
  it('is short, stable and distinct per replica', () => {
    const url = 'http://10.0.0.7:8443';
    expect(tagOf(url)).toMatch(/^[\w-]{8}$/);
    expect(tagOf(url)).toBe(tagOf(url));
    expect(tagOf('http://10.0.0.8:8443')).not.toBe(tagOf(url));
  });
});
