import { BadRequestException } from '@nestjs/common';

/**
 * Cursors are opaque to clients: the last id of the page as 8 big-endian bytes, base64url,
 * always 11 characters. Every string of that shape decodes to an int64, so every cursor the
 * API document allows is a valid position; paging by "id greater than the cursor" stays
 * stable while plants are added or deleted.
 */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]{10}[AEIMQUYcgkosw048]$';
const CURSOR = new RegExp(CURSOR_PATTERN);

export function encodeCursor(lastId: bigint): string {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(lastId);
  return bytes.toString('base64url');
}

export function decodeCursor(cursor: string): bigint {
  if (!CURSOR.test(cursor)) {
    throw new BadRequestException('cursor must come from the Link header of a previous page');
  }
  return Buffer.from(cursor, 'base64url').readBigInt64BE();
}
