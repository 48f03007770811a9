import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseLossless } from 'lossless-json';
import { formatIssues, formatPath } from './shared/issue-path.js';
import {
  mcpServersFileSchema,
  type McpServersFile,
  type McpServerSpec,
  reservedNameMessage,
  reservedServerNames,
} from './mcp-servers.schema.js';
import { expandVariables } from './var-expansion.js';

export const MCP_SERVERS_FILE = 'mcp-servers.json';

export interface McpServersLoad {
  file: string;
  /** True when the file does not exist and that is allowed (the default folder). */
  absent: boolean;
  specs: McpServerSpec[];
  problems: string[];
}

/** Reads `mcp-servers.json`; returns every problem, never throws: a bad reload changes nothing. */
export function loadMcpServers(
  dir: string,
  options: { required: boolean; environment: Readonly<Record<string, string | undefined>> },
): McpServersLoad {
  const file = join(dir, MCP_SERVERS_FILE);
  const result: McpServersLoad = { file, absent: false, specs: [], problems: [] };

  const text = readServersFile(result, options.required);
  if (text === undefined) return result;
  const entries = parseServersFile(result, text);
  if (entries === undefined) return result;

  for (const [name, entry] of Object.entries(entries)) {
    result.specs.push(expandEntry(name, entry, options.environment, result.problems));
  }
  if (result.problems.length > 0) result.specs = [];
  return result;
}

/** The file's text, or undefined when it is absent or unreadable (recorded in `result`). */
function readServersFile(result: McpServersLoad, required: boolean): string | undefined {
  try {
    return readFileSync(result.file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) {
      result.absent = true;
      return undefined;
    }
    result.problems.push(
      code === 'ENOENT'
        ? `SERVICE_CONFIG_DIR: ${result.file} does not exist`
        : `SERVICE_CONFIG_DIR: ${result.file} cannot be read (${code ?? 'unknown error'})`,
    );
    return undefined;
  }
}

/** The validated entries, or undefined when the JSON or its shape is wrong (recorded). */
function parseServersFile(
  result: McpServersLoad,
  text: string,
): McpServersFile['mcpServers'] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    result.problems.push(`${result.file} is not valid JSON: ${describeJsonError(text)}`);
    return undefined;
  }

  const reserved = reservedServerNames(json);
  if (reserved.length > 0) {
    result.problems.push(
      ...reserved.map(
        (name) => `${formatPath(['mcpServers', name])}: ${reservedNameMessage(name)}`,
      ),
    );
    return undefined;
  }

  const parsed = mcpServersFileSchema.safeParse(json);
  if (!parsed.success) {
    result.problems.push(...formatIssues(parsed.error.issues));
    return undefined;
  }
  return parsed.data.mcpServers;
}

/** Expands `${VAR}` in args and env; each unset variable without a default is a problem. */
function expandEntry(
  name: string,
  entry: McpServersFile['mcpServers'][string],
  environment: Readonly<Record<string, string | undefined>>,
  problems: string[],
): McpServerSpec {
  const expand = (value: string, path: PropertyKey[]) => {
    const { value: expanded, missing } = expandVariables(value, environment);
    for (const variable of missing) {
      problems.push(
        `${formatPath(['mcpServers', name, ...path])} uses \${${variable}}, which is not set and has no default`,
      );
    }
    return expanded;
  };
  return {
    ...entry,
    name,
    args: (entry.args ?? []).map((arg, i) => expand(arg, ['args', i])),
    env: Object.fromEntries(
      Object.entries(entry.env ?? {}).map(([key, value]) => [key, expand(value, ['env', key])]),
    ),
  };
}

/** "... at line 2, column 8": Node 20's JSON.parse often gives no position, lossless-json does. */
function describeJsonError(text: string): string {
  try {
    parseLossless(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const position = /^(.*) at position (\d+)$/.exec(message);
    if (position) {
      const before = text.slice(0, Number(position[2])).split('\n');
      return `${position[1]} at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
    }
    return message;
  }
  return 'not parseable';
}
