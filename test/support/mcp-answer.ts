/**
 * The JSON-RPC answer in a Streamable HTTP response's body: the body itself when it is JSON;
 * when it is an event stream (a 2025-11-25 session's `tools/call` answers on one), its last
 * response event. Null for an empty body or a stream that ended without an answer.
 */
export function answerIn(text: string, contentType: string | null): Record<string, unknown> | null {
  if (text === '') return null;
  if (!contentType?.includes('text/event-stream'))
    return JSON.parse(text) as Record<string, unknown>;
  const events = [...text.matchAll(/^data: (.+)$/gm)].map(
    ([, data]) => JSON.parse(data ?? '') as Record<string, unknown>,
  );
  return events.findLast((message) => 'result' in message || 'error' in message) ?? null;
}
