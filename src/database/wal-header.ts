import { closeSync, openSync, readSync } from 'node:fs';

/** The first 32 bytes of a SQLite WAL file: magic, format, page size, checkpoint, salts, checksum. */
export const WAL_HEADER_BYTES = 32;
const MAGIC_LITTLE_ENDIAN = 0x377f0682;
const MAGIC_BIG_ENDIAN = 0x377f0683;
const FORMAT_VERSION = 3007000;

export type WalHeader = NonNullable<ReturnType<typeof parseWalHeader>>;

/** The header if it verifies as SQLite's own check does (fileformat.html), else undefined. */
export function parseWalHeader(bytes: Buffer) {
  if (bytes.length < WAL_HEADER_BYTES) return undefined;
  const magic = bytes.readUInt32BE(0);
  if (magic !== MAGIC_LITTLE_ENDIAN && magic !== MAGIC_BIG_ENDIAN) return undefined;
  const pageSize = bytes.readUInt32BE(8);
  const validPageSize = pageSize >= 512 && pageSize <= 65536 && (pageSize & (pageSize - 1)) === 0;
  if (bytes.readUInt32BE(4) !== FORMAT_VERSION || !validPageSize) return undefined;
  const [sum1, sum2] = walChecksum(bytes.subarray(0, 24), magic === MAGIC_BIG_ENDIAN);
  if (sum1 !== bytes.readUInt32BE(24) || sum2 !== bytes.readUInt32BE(28)) return undefined;
  return {
    checkpoint: bytes.readUInt32BE(12),
    salt1: bytes.readUInt32BE(16),
    bytes: Buffer.from(bytes.subarray(0, WAL_HEADER_BYTES)),
  };
}

/** SQLite's WAL checksum over 32-bit words, in the byte order the magic names. */
function walChecksum(data: Buffer, bigEndian: boolean): [number, number] {
  let s0 = 0;
  let s1 = 0;
  for (let i = 0; i < data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/**
 * Whether SQLite itself could have written `next` after `known`: each WAL restart adds one to
 * both the checkpoint sequence and salt-1. Another header disowns the frames after it.
 */
export function isSuccessor(known: WalHeader, next: WalHeader): boolean {
  if (known.bytes.equals(next.bytes)) return true;
  const sameSize = known.bytes.readUInt32BE(8) === next.bytes.readUInt32BE(8);
  const restarts = (next.checkpoint - known.checkpoint) >>> 0;
  return (
    sameSize && restarts > 0 && restarts < 2 ** 31 && (next.salt1 - known.salt1) >>> 0 === restarts
  );
}

/** The first 32 bytes of `path` (fewer if the file is shorter). */
export function readWalHeaderBytes(path: string): Buffer {
  const bytes = Buffer.alloc(WAL_HEADER_BYTES);
  const fd = openSync(path, 'r');
  try {
    return bytes.subarray(0, readSync(fd, bytes, 0, WAL_HEADER_BYTES, 0));
  } finally {
    closeSync(fd);
  }
}
