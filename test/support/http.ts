/** A tiny client for the e2e tests: real HTTP over loopback, raw text kept for int64 checks. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed with JSON.parse (ids above 2^53 lose precision here: assert on `text`). */
  json: unknown;
}

export async function call(
  url: string,
  init: { method?: string; token?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (
    init.body !== undefined &&
    !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
  ) {
    headers['content-type'] = 'application/json';
  }
  const method = init.method ?? 'GET';
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body: init.body });
  } catch (error) {
    // A kept-alive socket the server closed at the same moment: like any HTTP client, retry an
    // idempotent request once on a new connection.
    if (method !== 'GET') throw error;
    response = await fetch(url, { method, headers, body: init.body });
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Asserts the Error body shape: `{"error": <status>, "message": <string>}` and nothing else. */
export function isErrorBody(answer: Answer): boolean {
  const body = answer.json as Record<string, unknown> | undefined;
  return (
    answer.headers.get('content-type')?.startsWith('application/json') === true &&
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).sort().join(',') === 'error,message' &&
    body.error === answer.status &&
    typeof body.message === 'string'
  );
}
