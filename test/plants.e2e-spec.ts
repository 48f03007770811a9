import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { type Answer, call, isErrorBody } from './support/http.js';
import { storeVariants } from './support/postgres.js';

describe.each(storeVariants)('plants API on $name', (store) => {
  let app: RunningApp;
  const post = (body: string, headers?: Record<string, string>) =>
    call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body, headers });

  beforeAll(async () => {
    app = await startApp({ env: await store.env() });
  });
  afterAll(async () => {
    await app.stop();
  });

  describe('POST /plants', () => {
    it('creates a plant and answers 200 with exactly the Plant shape', async () => {
      const created = await post('{"id": 1, "name": "Monstera", "tag": "aroid"}');
      expect(created.status).toBe(200);
      expect(created.headers.get('content-type')).toMatch(/^application\/json/);
      expect(created.text).toBe('{"name":"Monstera","tag":"aroid"}');
      expect(created.headers.get('x-powered-by')).toBeNull();
    });

    it('has no tag key when no tag was given, never null', async () => {
      const created = await post('{"id": 2, "name": "Fern"}');
      expect(created.status).toBe(200);
      expect(created.text).toBe('{"name":"Fern"}');
      const read = await call(`${app.apiUrl}/plants/2`, { token: app.token });
      expect(read.text).toBe('{"id":2,"name":"Fern"}');
    });

    it.each([
      ['9007199254740993', '2^53 + 1'],
      ['9223372036854775807', 'int64 max'],
      ['-9223372036854775808', 'int64 min'],
      ['0', 'zero'],
    ])('keeps id %s (%s) exactly, stored and shown', async (id) => {
      expect((await post(`{"id": ${id}, "name": "Exact"}`)).status).toBe(200);
      const read = await call(`${app.apiUrl}/plants/${id}`, { token: app.token });
      expect(read.status).toBe(200);
      expect(read.text).toBe(`{"id":${id},"name":"Exact"}`);
      const listed = await call(`${app.apiUrl}/plants?limit=100`, { token: app.token });
      expect(listed.text).toContain(`{"id":${id},"name":"Exact"}`);
    });

    // JSON Schema, so our OpenAPI 3.1 `type: integer`, counts 1.0 as an integer, and schemathesis
    // sends ids so: a literal that spells a whole number exactly is that integer.
    it.each([
      ['9007199254740995.0', '9007199254740995'],
      ['-9007199254740994.00', '-9007199254740994'],
      ['9.007199254740997e15', '9007199254740997'],
      ['9223372036854775806.0', '9223372036854775806'],
      ['60.0', '60'],
    ])('reads id %s as the exact integer %s', async (written, id) => {
      const created = await post(`{"id": ${written}, "name": "Whole"}`);
      expect(created.status).toBe(200);
      const read = await call(`${app.apiUrl}/plants/${id}`, { token: app.token });
      expect(read.text).toBe(`{"id":${id},"name":"Whole"}`);
    });

    it('answers 409 with an Error body for an id that exists', async () => {
      expect((await post('{"id": 30, "name": "First"}')).status).toBe(200);
      const again = await post('{"id": 30, "name": "Second"}');
      expect(again.status).toBe(409);
      expect(isErrorBody(again)).toBe(true);
      expect((again.json as { message: string }).message).toContain('30');
      const kept = await call(`${app.apiUrl}/plants/30`, { token: app.token });
      expect(kept.text).toBe('{"id":30,"name":"First"}');
    });

    // A POST answered 503 after a timeout may have committed: the client's retry must not fail.
    it('answers a retry with the stored body 200 and the stored plant, another body 409', async () => {
      const body = '{"id": 32, "name": "Retried", "tag": "t"}';
      expect((await post(body)).status).toBe(200);
      const retry = await post(body);
      expect(retry.status).toBe(200);
      expect(retry.text).toBe('{"name":"Retried","tag":"t"}');
      expect((await post('{"id": 33, "name": "No tag"}')).status).toBe(200);
      expect((await post('{"id": 33, "name": "No tag"}')).text).toBe('{"name":"No tag"}');
      for (const other of [
        '{"id": 32, "name": "Retried"}',
        '{"id": 32, "name": "Retried", "tag": "u"}',
        '{"id": 32, "name": "retried", "tag": "t"}',
        '{"id": 33, "name": "No tag", "tag": ""}',
      ]) {
        const conflict = await post(other);
        expect(conflict.status, other).toBe(409);
        expect(isErrorBody(conflict)).toBe(true);
      }
      const kept = await call(`${app.apiUrl}/plants/32`, { token: app.token });
      expect(kept.text).toBe('{"id":32,"name":"Retried","tag":"t"}');
    });

    it('gives exactly one 200 and 99 409s for 100 concurrent POSTs of one id', async () => {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => post(`{"id": 31, "name": "racer ${i}"}`)),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(99);
      expect(answers.every((a) => a.status === 200 || isErrorBody(a))).toBe(true);
    });

    it('creates 200 distinct plants sent at once, each acknowledged and stored', async () => {
      const ids = Array.from({ length: 200 }, (_, i) => 10_000 + i);
      const answers = await Promise.all(ids.map((id) => post(`{"id": ${id}, "name": "p${id}"}`)));
      expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
      for (const id of [10_000, 10_123, 10_199]) {
        const read = await call(`${app.apiUrl}/plants/${id}`, { token: app.token });
        expect(read.text).toBe(`{"id":${id},"name":"p${id}"}`);
      }
    });

    it.each([
      ['id above int64', '{"id": 9223372036854775808, "name": "x"}', /id must be an integer/],
      ['id below int64', '{"id": -9223372036854775809, "name": "x"}', /id must be an integer/],
      ['fractional id', '{"id": 1.5, "name": "x"}', /id must be an integer/],
      [
        'huge id with a non-zero fraction',
        '{"id": 9007199254740993.5, "name": "x"}',
        /id must be an integer/,
      ],
      [
        'id a number would round to 1',
        '{"id": 1.00000000000000000001, "name": "x"}',
        /id must be an integer/,
      ],
      ['string id', '{"id": "5", "name": "x"}', /id must be an integer/],
      ['null id', '{"id": null, "name": "x"}', /id is required|id must be/],
      ['boolean id', '{"id": true, "name": "x"}', /id must be an integer/],
      ['missing id', '{"name": "x"}', /id is required/],
      ['missing name', '{"id": 40}', /name is required/],
      ['numeric name', '{"id": 40, "name": 5}', /name must be a string/],
      ['empty name', '{"id": 40, "name": ""}', /name must be at least 1 character/],
      [
        'long name',
        `{"id": 40, "name": "${'n'.repeat(257)}"}`,
        /name must be at most 256 characters/,
      ],
      ['null tag', '{"id": 40, "name": "x", "tag": null}', /tag must be a string/],
      ['numeric tag', '{"id": 40, "name": "x", "tag": 3}', /tag must be a string/],
      [
        'long tag',
        `{"id": 40, "name": "x", "tag": "${'t'.repeat(65)}"}`,
        /tag must be at most 64 characters/,
      ],
      ['NUL in name', '{"id": 40, "name": "a\\u0000b"}', /name must not contain NUL characters/],
      [
        'NUL in tag',
        '{"id": 40, "name": "x", "tag": "\\u0000"}',
        /tag must not contain NUL characters/,
      ],
      [
        'lone surrogate in name',
        '{"id": 40, "name": "a\\ud800"}',
        /name must be well-formed Unicode text/,
      ],
      [
        'unknown property',
        '{"id": 40, "name": "x", "colour": "green"}',
        /property colour is not allowed/,
      ],
      [
        '__proto__ property',
        '{"id": 40, "name": "x", "__proto__": {"admin": true}}',
        /property __proto__ is not allowed/,
      ],
      [
        'constructor property',
        '{"id": 40, "name": "x", "constructor": 1}',
        /property constructor is not allowed/,
      ],
      ['array body', '[{"id": 40, "name": "x"}]', /must be a JSON object/],
      ['string body', '"plant"', /must be a JSON object/],
      ['null body', 'null', /must be a JSON object/],
      ['malformed JSON', '{"id": 40, "name": ', /not valid JSON/],
      ['duplicate keys', '{"id": 40, "id": 41, "name": "x"}', /not valid JSON/],
      ['id 1e400 (Infinity)', '{"id": 1e400, "name": "x"}', /id must be an integer/],
      ['id with a leading zero', '{"id": 040, "name": "x"}', /not valid JSON/],
      ['hexadecimal id', '{"id": 0x28, "name": "x"}', /not valid JSON/],
      ['NaN id', '{"id": NaN, "name": "x"}', /not valid JSON/],
      ['Infinity id', '{"id": Infinity, "name": "x"}', /not valid JSON/],
      ['a trailing comma', '{"id": 40, "name": "x",}', /not valid JSON/],
      ['a single-quoted string', "{'id': 40, 'name': 'x'}", /not valid JSON/],
      [
        'arrays nested 10,000 deep',
        '['.repeat(10_000) + ']'.repeat(10_000),
        /too deeply nested: arrays and objects may nest at most 64 levels/,
      ],
      [
        'an object nested 65 deep',
        `{"id": 40, "name": "x", "tag": ${'{"a":'.repeat(64)}1${'}'.repeat(64)}}`,
        /too deeply nested/,
      ],
    ])('answers 400 naming the rule for %s', async (_case, body, message) => {
      const answer = await post(body);
      expect(answer.status).toBe(400);
      expect(isErrorBody(answer)).toBe(true);
      expect((answer.json as { message: string }).message).toMatch(message);
      expect((await call(`${app.apiUrl}/plants/40`, { token: app.token })).status).toBe(404);
    });

    it('names the first 5 of 6,500 unknown properties and counts the rest, in a short message', async () => {
      const extra = Array.from({ length: 6_500 }, (_, i) => `"p${i}":0`).join(',');
      const answer = await post(`{"id": 40, "name": "x", ${extra}}`);
      expect(answer.status).toBe(400);
      expect(isErrorBody(answer)).toBe(true);
      const message = (answer.json as { message: string }).message;
      expect(message).toBe(
        '6500 problems: property p0 is not allowed; property p1 is not allowed; ' +
          'property p2 is not allowed; property p3 is not allowed; ' +
          'property p4 is not allowed; and 6495 more unknown properties (6500 in all)',
      );
      expect((await call(`${app.apiUrl}/plants/40`, { token: app.token })).status).toBe(404);
    });

    it('reports every problem of a body in one message', async () => {
      const answer = await post('{"id": 1.5, "name": "", "color": "green"}');
      expect(answer.status).toBe(400);
      expect(isErrorBody(answer)).toBe(true);
      expect((answer.json as { message: string }).message).toMatch(
        /^3 problems: id must be an integer[^;]*; name must be at least 1 character; property color is not allowed$/,
      );
    });

    /** POSTs raw bytes, so a test can send what is not UTF-8. */
    const postBytes = async (bytes: Buffer, contentType: string) => {
      const answer = await fetch(`${app.apiUrl}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.token}`, 'content-type': contentType },
        body: bytes,
      });
      return { status: answer.status, body: await answer.json() };
    };

    it.each([
      ['latin1', Buffer.from('{"id": 45, "name": "caf\xe9"}', 'latin1')],
      ['iso-8859-1', Buffer.from('{"id": 45, "name": "caf\xe9"}', 'latin1')],
      ['utf-16le', Buffer.from('{"id": 45, "name": "café"}', 'utf16le')],
      ['utf-16', Buffer.from('{"id": 45, "name": "café"}', 'utf16le')],
    ])('answers 415 for charset=%s and stores nothing', async (charset, bytes) => {
      const answer = await postBytes(bytes, `application/json; charset=${charset}`);
      expect(answer).toEqual({
        status: 415,
        body: { error: 415, message: 'the request body must be UTF-8 (charset=utf-8 or none)' },
      });
      expect((await call(`${app.apiUrl}/plants/45`, { token: app.token })).status).toBe(404);
    });

    it.each([
      ['a lone byte 0xe9', Buffer.from('{"id": 46, "name": "caf\xe9"}', 'latin1')],
      ['an overlong encoding', Buffer.from('{"id": 46, "name": "\xc0\xaf"}', 'latin1')],
      ['an encoded surrogate', Buffer.from('{"id": 46, "name": "\xed\xa0\x80"}', 'latin1')],
    ])('answers 400 for invalid UTF-8 (%s), never stores U+FFFD', async (_case, bytes) => {
      const answer = await postBytes(bytes, 'application/json');
      expect(answer).toEqual({
        status: 400,
        body: { error: 400, message: 'the request body is not valid UTF-8' },
      });
      expect((await call(`${app.apiUrl}/plants/46`, { token: app.token })).status).toBe(404);
    });

    it('accepts charset=utf-8 in any case', async () => {
      const answer = await postBytes(
        Buffer.from('{"id": 47, "name": "café"}'),
        'application/json; charset=UTF-8',
      );
      expect(answer).toEqual({ status: 200, body: { name: 'café' } });
    });

    it('keeps any other Unicode exactly: emoji, control characters, right-to-left text', async () => {
      const name = 'Fern 🌿 \\u001b\\t שָׁלוֹם';
      expect((await post(`{"id": 44, "name": "${name}"}`)).status).toBe(200);
      const read = await call(`${app.apiUrl}/plants/44`, { token: app.token });
      expect((read.json as { name: string }).name).toBe(JSON.parse(`"${name}"`));
    });

    it('answers 405 with Allow for a method a plant path does not offer', async () => {
      const collection = await call(`${app.apiUrl}/plants`, { method: 'PUT', token: app.token });
      expect(collection.status).toBe(405);
      expect(isErrorBody(collection)).toBe(true);
      expect(collection.headers.get('allow')).toBe('GET, POST');
      const item = await call(`${app.apiUrl}/plants/1`, {
        method: 'PATCH',
        token: app.token,
        body: '{}',
      });
      expect(item.status).toBe(405);
      expect(item.headers.get('allow')).toBe('GET, DELETE');
    });

    it('accepts name at 256 and tag at 64 characters', async () => {
      const answer = await post(
        `{"id": 41, "name": "${'n'.repeat(256)}", "tag": "${'t'.repeat(64)}"}`,
      );
      expect(answer.status).toBe(200);
    });

    it('answers 413 for a body over 64 KiB', async () => {
      const answer = await post(`{"id": 42, "name": "${'n'.repeat(70_000)}"}`);
      expect(answer.status).toBe(413);
      expect(isErrorBody(answer)).toBe(true);
    });

    it.each(['text/plain', 'application/x-www-form-urlencoded'])(
      'answers 415 for a %s body',
      async (type) => {
        const answer = await post('{"id": 43, "name": "x"}', { 'content-type': type });
        expect(answer.status).toBe(415);
        expect(isErrorBody(answer)).toBe(true);
      },
    );
  });

  describe('GET /plants', () => {
    const list = (query: string) => call(`${app.apiUrl}/plants${query}`, { token: app.token });
    /** The `rel="next"` target of a Link header, resolved against the request URL. */
    const nextUrl = (answer: Answer, requestUrl: string): string | undefined => {
      const link = answer.headers.get('link');
      if (link === null) return undefined;
      const match = /^<([^>]*)>; rel="next"$/.exec(link);
      expect(match, `Link: ${link}`).not.toBeNull();
      return new URL(match![1]!, requestUrl).href;
    };
    /** ids as text, to compare int64 values exactly */
    const idsOf = (answer: Answer) => [...answer.text.matchAll(/"id":(-?\d+)/g)].map((m) => m[1]!);

    it('pages through every plant in id order with the Link header, absent on the last page', async () => {
      const seen: string[] = [];
      let url: string | undefined = `${app.apiUrl}/plants?limit=7`;
      let pages = 0;
      let last: Answer | undefined;
      while (url !== undefined && pages < 1000) {
        const page = await call(url, { token: app.token });
        expect(page.status).toBe(200);
        expect(Array.isArray(page.json)).toBe(true);
        expect((page.json as unknown[]).length).toBeLessThanOrEqual(7);
        seen.push(...idsOf(page));
        last = page;
        const next = nextUrl(page, url);
        if (next !== undefined) {
          expect((page.json as unknown[]).length).toBe(7);
          expect(new URL(next).searchParams.get('limit')).toBe('7');
        }
        url = next;
        pages++;
      }
      expect(pages).toBeGreaterThan(2);
      expect(last!.headers.get('link')).toBeNull();
      const sorted = [...seen].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      expect(seen).toEqual(sorted);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toContain('9223372036854775807');
      expect(seen).toContain('-9223372036854775808');
    });

    it('answers a bare JSON array of {id, name, tag?} items', async () => {
      const page = await list('?limit=100');
      expect(page.text.startsWith('[{"id":')).toBe(true);
      const items = page.json as Record<string, unknown>[];
      expect(items.length).toBeGreaterThan(0);
      for (const item of items) {
        expect(['id,name', 'id,name,tag']).toContain(Object.keys(item).sort().join(','));
      }
    });

    it('defaults to 20 items', async () => {
      const page = await list('');
      expect(page.json as unknown[]).toHaveLength(20);
      expect(page.headers.get('link')).toMatch(/^<\?cursor=[\w-]{11}>; rel="next"$/);
    });

    it.each(['101', '1000', '2147483647'])('gives a page of 100 for limit=%s', async (limit) => {
      const page = await list(`?limit=${limit}`);
      expect(page.status).toBe(200);
      expect(page.json as unknown[]).toHaveLength(100);
      expect(page.headers.get('link')).toMatch(
        new RegExp(`^<\\?limit=${limit}&cursor=[\\w-]{11}>; rel="next"$`),
      );
    });

    it.each(['0', '-1', '-2147483648'])('answers [] without a Link for limit=%s', async (limit) => {
      const page = await list(`?limit=${limit}`);
      expect(page.status).toBe(200);
      expect(page.text).toBe('[]');
      expect(page.headers.get('link')).toBeNull();
    });

    it.each(['abc', '1.5', '2147483648', '-2147483649', '', '1e3', '+5'])(
      'answers 400 for limit=%j',
      async (limit) => {
        const answer = await list(`?limit=${limit}`);
        expect(answer.status).toBe(400);
        expect(isErrorBody(answer)).toBe(true);
        expect((answer.json as { message: string }).message).toMatch(
          /limit must be an integer from -2147483648 to 2147483647/,
        );
      },
    );

    it('names an unknown query parameter as one, not as a property', async () => {
      const answer = await list('?limit=2&page=3');
      expect(answer.status).toBe(400);
      expect((answer.json as { message: string }).message).toBe(
        'query parameter page is not allowed',
      );
    });

    it('answers 400 for a cursor it did not make, whatever the limit', async () => {
      for (const query of ['?cursor=not-a-cursor!', '?limit=0&cursor=not-a-cursor!']) {
        const answer = await list(query);
        expect(answer.status).toBe(400);
        expect(isErrorBody(answer)).toBe(true);
      }
    });
  });

  describe('GET and DELETE /plants/{id}', () => {
    it('answers 404 for an id that does not exist', async () => {
      const answer = await call(`${app.apiUrl}/plants/424242`, { token: app.token });
      expect(answer.status).toBe(404);
      expect(isErrorBody(answer)).toBe(true);
    });

    it.each(['abc', '1.5', '9223372036854775808', '0x10'])('answers 400 for id %s', async (id) => {
      const answer = await call(`${app.apiUrl}/plants/${id}`, { token: app.token });
      expect(answer.status).toBe(400);
      expect(isErrorBody(answer)).toBe(true);
    });

    it('deletes with 204, then 404', async () => {
      expect((await post('{"id": 50, "name": "Gone"}')).status).toBe(200);
      const deleted = await call(`${app.apiUrl}/plants/50`, { method: 'DELETE', token: app.token });
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      expect((await call(`${app.apiUrl}/plants/50`, { token: app.token })).status).toBe(404);
      const again = await call(`${app.apiUrl}/plants/50`, { method: 'DELETE', token: app.token });
      expect(again.status).toBe(404);
      expect(isErrorBody(again)).toBe(true);
    });
  });

  it('answers unknown routes with a 404 Error body', async () => {
    const answer = await call(`${app.apiUrl}/nothing/here`, { token: app.token });
    expect(answer.status).toBe(404);
    expect(isErrorBody(answer)).toBe(true);
  });
});
