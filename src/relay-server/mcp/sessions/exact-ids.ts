import { isInteger, isSafeNumber, type LosslessNumber, parse } from 'lossless-json';
import { isObject, type JsonRpcId, type Message } from '../../json-rpc/json-rpc.js';

/** A numeric id that is no integer and that no JS number holds exactly (`0.10000000000000000001`). */
export const INEXACT_ID = Symbol('INEXACT_ID');

// `id` and a cancel's `requestId` as sent: JSON.parse rounds integers past 2^53, and the answer
// would carry an id never sent. Only a message holding such a number is parsed again, losslessly.
export function withExactIds(message: unknown, text: string): unknown {
  if (!isObject(message)) return message;
  const params = isObject(message.params) ? message.params : undefined;
  if (!needsExactValue(message.id) && !needsExactValue(params?.requestId)) return message;
  let lossless: Message;
  try {
    lossless = parse(text) as Message;
  } catch {
    // A document JSON.parse takes but the lossless parser does not (a duplicated key).
    return INEXACT_ID;
  }
  const exact: Message = { ...message };
  if (needsExactValue(message.id)) {
    const id = exactNumber(lossless.id);
    if (id === undefined) return INEXACT_ID;
    exact.id = id;
  }
  if (params && needsExactValue(params.requestId)) {
    const requestId = exactNumber((lossless.params as Message).requestId);
    if (requestId === undefined) return INEXACT_ID;
    exact.params = { ...params, requestId };
  }
  return exact;
}

function needsExactValue(value: unknown): boolean {
  return typeof value === 'number' && !Number.isSafeInteger(value);
}

function exactNumber(value: unknown): JsonRpcId | undefined {
  const literal = (value as LosslessNumber).value;
  if (isInteger(literal)) return isSafeNumber(literal) ? Number(literal) : BigInt(literal);
  return isSafeNumber(literal) ? Number(literal) : undefined;
}
