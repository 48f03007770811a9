import { isDeepStrictEqual } from 'node:util';
import type { McpServerSpec } from '../../config/mcp-servers.schema.js';

/** What a reload of `mcp-servers.json` changes: only these servers are started or stopped. */
export interface SpecDiff {
  added: McpServerSpec[];
  removed: string[];
  changed: McpServerSpec[];
}

export function diffSpecs(
  running: readonly McpServerSpec[],
  wanted: readonly McpServerSpec[],
): SpecDiff {
  const before = new Map(running.map((spec) => [spec.name, spec]));
  const after = new Set(wanted.map((spec) => spec.name));
  const diff: SpecDiff = { added: [], removed: [], changed: [] };
  for (const spec of wanted) {
    const old = before.get(spec.name);
    if (!old) diff.added.push(spec);
    else if (!isDeepStrictEqual(old, spec)) diff.changed.push(spec);
  }
  diff.removed = running.filter((spec) => !after.has(spec.name)).map((spec) => spec.name);
  return diff;
}
