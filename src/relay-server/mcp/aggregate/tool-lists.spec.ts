import { describe, expect, it } from 'vitest';
import { jsonRpcError, type JsonRpcResponse } from '../../json-rpc/json-rpc.js';
import { listAllTools, prefixTools, type ToolListLimits } from './tool-lists.js';

const LIMITS: ToolListLimits = { maxPagesPerServer: 3, concurrency: 2, maxBytes: 100_000 };
const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  inputSchema: { type: 'object' },
  ...extra,
});
const page = (tools: unknown[], nextCursor?: string): JsonRpcResponse => ({
  jsonrpc: '2.0',
  id: 1,
  result: nextCursor === undefined ? { tools } : { tools, nextCursor },
});

/** A fake agent: per server, its pages by cursor ('' for the first). */
function agent(pages: Record<string, Record<string, JsonRpcResponse>>) {
  const asked: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetchPage = async (server: string, cursor: string | undefined) => {
    asked.push(`${server}:${cursor ?? ''}`);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((r) => setImmediate(r));
    inFlight--;
    return pages[server]?.[cursor ?? ''] ?? jsonRpcError(1, -32001, `no server ${server}`);
  };
  return { fetchPage, asked, maxInFlight: () => maxInFlight };
}

describe('listAllTools', () => {
  it("merges every server's tools, prefixed, in the servers' order, keeping their fields", async () => {
    const { fetchPage } = agent({
      github: { '': page([tool('search', { annotations: { readOnlyHint: true } })]) },
      echo: { '': page([tool('echo'), tool('crash')]) },
    });
    const merged = await listAllTools(['echo', 'github'], fetchPage, LIMITS);
    expect(merged.tools).toEqual([
      tool('echo__echo'),
      tool('echo__crash'),
      tool('github__search', { annotations: { readOnlyHint: true } }),
    ]);
    expect(merged.failures).toEqual([]);
  });

  it("follows each server's nextCursor", async () => {
    const { fetchPage, asked } = agent({
      a: { '': page([tool('one')], 'p2'), p2: page([tool('two')], 'p3'), p3: page([tool('3')]) },
    });
    const merged = await listAllTools(['a'], fetchPage, LIMITS);
    expect(merged.tools.map((t) => t.name)).toEqual(['a__one', 'a__two', 'a__3']);
    expect(asked).toEqual(['a:', 'a:p2', 'a:p3']);
  });

  it('stops after the page limit, keeping what it has and saying so', async () => {
    const endless: Record<string, JsonRpcResponse> = {};
    for (let i = 0; i < 10; i++)
      endless[i === 0 ? '' : `p${i}`] = page([tool(`t${i}`)], `p${i + 1}`);
    const { fetchPage, asked } = agent({ a: endless });
    const merged = await listAllTools(['a'], fetchPage, LIMITS);
    expect(asked).toHaveLength(3);
    expect(merged.tools.map((t) => t.name)).toEqual(['a__t0', 'a__t1', 'a__t2']);
    expect(merged.failures).toEqual([
      { server: 'a', reason: 'more than 3 pages of tools; the rest left out' },
    ]);
  });

  it('leaves out a server that fails or answers nonsense, and keeps the others', async () => {
    const { fetchPage } = agent({
      ok: { '': page([tool('x')]) },
      broken: { '': { jsonrpc: '2.0', id: 1, result: { tools: 'no' } } },
      slow: { '': jsonRpcError(1, -32003, 'MCP server "slow" did not answer within 60000 ms') },
    });
    const merged = await listAllTools(['broken', 'ok', 'slow', 'gone'], fetchPage, LIMITS);
    expect(merged.tools.map((t) => t.name)).toEqual(['ok__x']);
    expect(merged.failures).toEqual(
      expect.arrayContaining([
        { server: 'broken', reason: 'tools/list answer without a tools array' },
        { server: 'slow', reason: expect.stringContaining('did not answer') as unknown },
        { server: 'gone', reason: 'tools/list failed: no server gone' },
      ]),
    );
    expect(merged.failures).toHaveLength(3);
  });

  it('never asks a server whose name cannot be prefixed', async () => {
    const { fetchPage, asked } = agent({ a__b: { '': page([tool('x')]) }, c_: { '': page([]) } });
    const merged = await listAllTools(['a__b', 'c_'], fetchPage, LIMITS);
    expect(asked).toEqual([]);
    expect(merged.tools).toEqual([]);
    expect(merged.failures.map((f) => f.server)).toEqual(['a__b', 'c_']);
  });

  it('leaves out a server whose tools would pass the byte limit', async () => {
    const big = tool('big', { description: 'x'.repeat(600) });
    const { fetchPage } = agent({ a: { '': page([tool('small')]) }, b: { '': page([big]) } });
    const merged = await listAllTools(['a', 'b'], fetchPage, { ...LIMITS, maxBytes: 500 });
    expect(merged.tools.map((t) => t.name)).toEqual(['a__small']);
    expect(merged.failures).toEqual([
      { server: 'b', reason: 'its tools would make the merged list larger than 500 bytes' },
    ]);
  });

  it("holds the byte limit over servers listed side by side, and frees a dropped server's share", async () => {
    // Each server's tools fit alone (about 340 bytes); two together do not. With concurrency 2
    // both are asked at once, so the limit must count pages as they arrive.
    const mid = (name: string) => tool(name, { description: 'x'.repeat(300) });
    const { fetchPage, maxInFlight } = agent({
      a: { '': page([mid('one')], 'p2'), p2: jsonRpcError(1, -32603, 'broken second page') },
      b: { '': page([mid('two')]) },
      c: { '': page([mid('three')]) },
    });
    const merged = await listAllTools(['a', 'b', 'c'], fetchPage, { ...LIMITS, maxBytes: 500 });
    expect(maxInFlight()).toBe(2); // the precondition: a and b were listed side by side
    // a's first page is counted, so b does not fit; a then fails and gives its share back: c fits.
    expect(merged.tools.map((t) => t.name)).toEqual(['c__three']);
    expect(merged.failures.map((f) => f.server).sort()).toEqual(['a', 'b']);
  });

  it('asks at most `concurrency` servers at once, and every server once', async () => {
    const pages: Record<string, Record<string, JsonRpcResponse>> = {};
    const servers = ['s1', 's2', 's3', 's4', 's5'];
    for (const s of servers) pages[s] = { '': page([tool('t')]) };
    const fake = agent(pages);
    const merged = await listAllTools(servers, fake.fetchPage, LIMITS);
    expect(fake.maxInFlight()).toBe(2);
    expect(fake.asked.sort()).toEqual(servers.map((s) => `${s}:`));
    expect(merged.tools.map((t) => t.name)).toEqual(servers.map((s) => `${s}__t`));
  });
});

describe('prefixTools', () => {
  it('counts tools without a name, duplicates and names too long, and keeps the rest', () => {
    const result = prefixTools('s', [
      tool('ok'),
      { inputSchema: {} },
      'not a tool',
      tool('ok'),
      tool('x'.repeat(126)),
      tool('y'.repeat(125)),
    ]);
    expect(result.tools.map((t) => t.name)).toEqual(['s__ok', `s__${'y'.repeat(125)}`]);
    expect(result.leftOut).toBe(4);
  });
});
