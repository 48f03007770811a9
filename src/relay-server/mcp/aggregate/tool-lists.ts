import { isObject, type JsonRpcResponse } from '../../json-rpc/json-rpc.js';
import { canPrefix, MAX_TOOL_NAME_LENGTH, prefixedName } from './tool-names.js';

/** One `tools/list` request to one MCP server of the agent (`cursor` for the next page). */
export type FetchToolsPage = (
  server: string,
  cursor: string | undefined,
) => Promise<JsonRpcResponse>;

export interface ToolListLimits {
  /** Pages followed per server (`nextCursor`); the rest of a longer list is left out. */
  maxPagesPerServer: number;
  concurrency: number;
  /** Bytes (as JSON) of all servers' tools together; a server that would pass it is left out. */
  maxBytes: number;
}

type ToolListFailure = { server: string; reason: string };

/** Every server's pages, prefixed, in `servers` order; one that fails is left out and reported. */
export async function listAllTools(
  servers: readonly string[],
  fetchPage: FetchToolsPage,
  limits: ToolListLimits,
) {
  const failures: ToolListFailure[] = [];
  const lists = new Map<string, unknown[]>();
  const listed: ListedBytes = { bytes: 0 };

  let next = 0;
  const worker = async () => {
    while (next < servers.length) {
      const server = servers[next++]!;
      const tools = await listServerTools(server, fetchPage, limits, listed, failures);
      if (tools !== undefined) lists.set(server, tools);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limits.concurrency, servers.length) }, worker));

  const merged: Record<string, unknown>[] = [];
  for (const server of servers) {
    const { tools, leftOut } = prefixTools(server, lists.get(server) ?? []);
    merged.push(...tools);
    if (leftOut > 0) {
      failures.push({
        server,
        reason: `${leftOut} tools left out: no name, a duplicate, or over ${MAX_TOOL_NAME_LENGTH} characters with the prefix`,
      });
    }
  }
  return { tools: merged, failures };
}

type ListedBytes = { bytes: number };

/** One server's list up to the page limit; undefined (reason in `failures`) when left out. */
async function listServerTools(
  server: string,
  fetchPage: FetchToolsPage,
  limits: ToolListLimits,
  listed: ListedBytes,
  failures: ToolListFailure[],
): Promise<unknown[] | undefined> {
  if (!canPrefix(server)) {
    failures.push({
      server,
      reason: 'its name contains "__" or ends in "_", so its tools cannot be named unambiguously',
    });
    return undefined;
  }
  const tools: unknown[] = [];
  let serverBytes = 0;
  let cursor: string | undefined;
  const leaveOut = (reason: string): undefined => {
    listed.bytes -= serverBytes;
    failures.push({ server, reason });
    return undefined;
  };
  for (let page = 1; ; page++) {
    const read = readToolsPage(await fetchPage(server, cursor));
    if ('reason' in read) return leaveOut(read.reason);
    const pageBytes = Buffer.byteLength(JSON.stringify(read.tools));
    // Counted at once: the servers are listed side by side and together keep at most maxBytes.
    if (listed.bytes + pageBytes > limits.maxBytes) {
      return leaveOut(`its tools would make the merged list larger than ${limits.maxBytes} bytes`);
    }
    listed.bytes += pageBytes;
    serverBytes += pageBytes;
    tools.push(...read.tools);
    cursor = read.nextCursor;
    if (cursor === undefined) break;
    if (page === limits.maxPagesPerServer) {
      failures.push({
        server,
        reason: `more than ${limits.maxPagesPerServer} pages of tools; the rest left out`,
      });
      break;
    }
  }
  return tools;
}

function readToolsPage(
  answer: JsonRpcResponse,
): { tools: unknown[]; nextCursor: string | undefined } | { reason: string } {
  if (answer.error !== undefined) return { reason: `tools/list failed: ${answer.error.message}` };
  const result = answer.result;
  if (!isObject(result) || !Array.isArray(result.tools)) {
    return { reason: 'tools/list answer without a tools array' };
  }
  return {
    tools: result.tools as unknown[],
    nextCursor: typeof result.nextCursor === 'string' ? result.nextCursor : undefined,
  };
}

/** `server`'s tools with prefixed names; tools without a usable name are counted, not kept. */
export function prefixTools(
  server: string,
  tools: readonly unknown[],
): { tools: Record<string, unknown>[]; leftOut: number } {
  const kept: Record<string, unknown>[] = [];
  const names = new Set<string>();
  let leftOut = 0;
  for (const tool of tools) {
    const original = isObject(tool) && typeof tool.name === 'string' ? tool.name : undefined;
    const name = original === undefined ? undefined : prefixedName(server, original);
    if (name === undefined || names.has(name)) {
      leftOut++;
      continue;
    }
    names.add(name);
    kept.push({ ...(tool as Record<string, unknown>), name });
  }
  return { tools: kept, leftOut };
}
