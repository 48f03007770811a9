import { describe, expect, it } from 'vitest';
import { INEXACT_ID, withExactIds } from './exact-ids.js';
import { idKey, stringifyMessage } from '../../json-rpc/json-rpc.js';

const read = (text: string) => withExactIds(JSON.parse(text), text);
const HUGE = '123456789012345678901234567890';

describe('withExactIds', () => {
  it.each([
    ['a small integer', '7', 7],
    ['a string', '"abc"', 'abc'],
    ['a fraction a double holds', '1.5', 1.5],
    ['2^53 + 1', '9007199254740993', 9007199254740993n],
    ['an integer of 30 digits', HUGE, BigInt(HUGE)],
    ['a negative one', `-${HUGE}`, -BigInt(HUGE)],
  ])('keeps %s as the client wrote it', (_, literal, id) => {
    expect(read(`{"jsonrpc":"2.0","id":${literal},"method":"ping"}`)).toEqual({
      jsonrpc: '2.0',
      id,
      method: 'ping',
    });
  });

  it.each(['0.1000000000000000000001', '1e400', '1e21'])(
    'refuses the id %s, which no number holds exactly',
    (literal) => {
      expect(read(`{"jsonrpc":"2.0","id":${literal},"method":"ping"}`)).toBe(INEXACT_ID);
    },
  );

  it("keeps the requestId of a cancellation exactly, so it finds the request's key", () => {
    const message = read(
      `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${HUGE},"reason":"x"}}`,
    ) as { params: { requestId: unknown; reason: string } };
    expect(message.params).toEqual({ requestId: BigInt(HUGE), reason: 'x' });
    expect(idKey(message.params.requestId)).toBe(idKey(BigInt(HUGE)));
  });

  it('returns a message with safe ids unchanged (no second parse)', () => {
    const message = JSON.parse('{"jsonrpc":"2.0","id":1,"method":"ping"}') as object;
    expect(withExactIds(message, 'not even JSON')).toBe(message);
  });
});

describe('stringifyMessage', () => {
  it('writes a bigint id digit for digit, and anything else as JSON.stringify does', () => {
    expect(stringifyMessage({ jsonrpc: '2.0', id: BigInt(HUGE), result: { n: 1.5 } })).toBe(
      `{"jsonrpc":"2.0","id":${HUGE},"result":{"n":1.5}}`,
    );
    expect(stringifyMessage({ id: 'a', result: [1, null] })).toBe('{"id":"a","result":[1,null]}');
  });

  it('keeps string and number ids apart as keys', () => {
    expect(idKey(1)).not.toBe(idKey('1'));
  });
});
