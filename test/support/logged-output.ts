import { waitFor } from '../fixtures/mcp-e2e-support.js';

const patchLines = (output: string): number => output.split('"method":"PATCH"').length - 1;

/**
 * Everything the process has logged so far. Its lines go out in batches (up to 100 ms), so this
 * sends a PATCH (no route takes one) and waits for its log line: what was logged before it has
 * been written too.
 */
export async function loggedSoFar(
  process: { output(): string },
  url: string,
  fetcher: typeof fetch = fetch,
): Promise<string> {
  const before = patchLines(process.output());
  await (await fetcher(url, { method: 'PATCH' })).arrayBuffer();
  await waitFor(() => patchLines(process.output()) > before, 'the log line of a PATCH');
  return process.output();
}
