import { BadRequestException } from '@nestjs/common';
import { parseInt64 } from '../common/json/int64.js';

/**
 * Cursors are opaque to clients: the last id of the page, base64url-encoded. Paging by
 * "id greater than the cursor" stays stable while plants are added or deleted.
 */
export function encodeCursor(lastId: bigint): string {
  return Buffer.from(lastId.toString(), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): bigint {
  const id = /^[A-Za-z0-9_-]{1,32}$/.test(cursor)
    ? parseInt64(Buffer.from(cursor, 'base64url').toString('utf8'))
    : undefined;
  if (id === undefined) {
    throw new BadRequestException('cursor must be a nextCursor value from a previous page');
  }
  return id;
}
