import { Agent, request } from 'undici';

/** An IdP document over RELAY_OAUTH_MAX_DOCUMENT_BYTES: refused, the rest of it never read. */
export class DocumentTooLargeError extends Error {}

/** Verified even when NODE_TLS_REJECT_UNAUTHORIZED=0: a private CA goes in NODE_EXTRA_CA_CERTS. */
const verifying = new Agent({ connect: { rejectUnauthorized: true } });

// undici (TLS verified, no redirects); the body is dropped at the first byte past `maxBytes`, so
// a huge document costs at most the cap. `init.signal` bounds the whole read.
export async function cappedFetch(
  url: string | URL,
  init: RequestInit,
  maxBytes: number,
): Promise<Response> {
  const headers = Object.fromEntries(new Headers(init.headers).entries());
  const signal = init.signal ?? undefined;
  const answer = await request(url, { method: 'GET', headers, signal, dispatcher: verifying });
  if (answer.statusCode !== 200) {
    drop(answer.body);
    return new Response(null, { status: answer.statusCode });
  }
  if (Number(answer.headers['content-length'] ?? 0) > maxBytes) {
    drop(answer.body);
    throw tooLarge(url, maxBytes);
  }
  const body = await readAtMost(answer.body, maxBytes);
  if (!body) throw tooLarge(url, maxBytes);
  return new Response(body, { status: 200 });
}

type Body = AsyncIterable<Buffer> & {
  on(event: 'error', listener: () => void): unknown;
  destroy(): void;
};

/** Drops a body unread; its AbortError event, unheard, would end the process. */
function drop(body: Body): void {
  body.on('error', () => {});
  body.destroy();
}

/** The stream's bytes; undefined (the rest dropped unread) past `maxBytes`. */
export async function readAtMost(stream: Body, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > maxBytes) {
      drop(stream);
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const tooLarge = (url: string | URL, maxBytes: number) =>
  new DocumentTooLargeError(`${String(url)} is larger than ${maxBytes} bytes`);
