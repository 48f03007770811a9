import { BadRequestException } from '@nestjs/common';

/**
 * An opaque cursor: the page's last id as 8 bytes, base64url. Every string of the allowed
 * shape is a valid position, and "id greater than" stays stable while plants come and go.
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
