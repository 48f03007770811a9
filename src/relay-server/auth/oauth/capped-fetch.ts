/** An IdP document over RELAY_OAUTH_MAX_DOCUMENT_BYTES: refused, the rest of it never read. */
export class DocumentTooLargeError extends Error {}

/**
 * `fetch` (Node's undici) whose body is read as a stream and dropped at the first byte past
 * `maxBytes`: a huge metadata document or key set costs at most the cap in memory, not the
 * pod. The answer is a Response over the bytes read, for `jose` and for the metadata parser.
 */
export async function cappedFetch(
  url: string | URL,
  init: RequestInit,
  maxBytes: number,
): Promise<Response> {
  const response = await fetch(url, init);
  if (response.status !== 200) {
    await response.body?.cancel();
    return new Response(null, { status: response.status });
  }
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge(url, maxBytes);
  }
  const body = await readAtMost(response.body, maxBytes);
  if (!body) throw tooLarge(url, maxBytes);
  return new Response(body, { status: 200 });
}

/** The whole body, or undefined (and the stream cancelled) when it passes `maxBytes`. */
async function readAtMost(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  if (!stream) return new Uint8Array();
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
}

const tooLarge = (url: string | URL, maxBytes: number) =>
  new DocumentTooLargeError(`${String(url)} is larger than ${maxBytes} bytes`);
