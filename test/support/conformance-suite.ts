import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The pinned MCP conformance suite and its reference server (test/conformance). */
export const CONFORMANCE_DIR = join(import.meta.dirname, '../conformance');

/**
 * The node that runs the suite's CLI and the reference server: they need Node >= 22. On Node
 * 20, CONFORMANCE_NODE may name a newer one.
 */
export function conformanceNode(): string | undefined {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= 22 ? process.execPath : process.env.CONFORMANCE_NODE || undefined;
}

/** Why the conformance spec cannot run here, or undefined when it can. */
export function conformanceMissing(): string | undefined {
  if (!existsSync(join(CONFORMANCE_DIR, 'node_modules/conformance-0.2/dist/index.js'))) {
    return 'the suite is not installed: npm ci --prefix test/conformance';
  }
  if (!conformanceNode()) return 'it needs Node >= 22 (or CONFORMANCE_NODE naming one)';
  return undefined;
}
