import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseLossless } from 'lossless-json';
import { formatIssues, formatPath } from './shared/issue-path.js';
import {
  mcpServersFileSchema,
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

/**
 * Reads, parses and validates `mcp-servers.json` in `dir`. Never throws: every problem is
 * returned, so start-up can report it with the environment's problems and hot reload can keep
 * the running set when the new file is bad.
 */
export function loadMcpServers(
  dir: string,
  options: { required: boolean; environment: Readonly<Record<string, string | undefined>> },
): McpServersLoad {
  const file = join(dir, MCP_SERVERS_FILE);
  const result: McpServersLoad = { file, absent: false, specs: [], problems: [] };

  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !options.required) {
      result.absent = true;
      return result;
    }
    result.problems.push(
      code === 'ENOENT'
        ? `SERVICE_CONFIG_DIR: ${file} does not exist`
        : `SERVICE_CONFIG_DIR: ${file} cannot be read (${code ?? 'unknown error'})`,
    );
    return result;
  }

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    result.problems.push(`${file} is not valid JSON: ${describeJsonError(text)}`);
    return result;
  }

  const reserved = reservedServerNames(json);
  if (reserved.length > 0) {
    result.problems.push(
      ...reserved.map(
        (name) => `${formatPath(['mcpServers', name])}: ${reservedNameMessage(name)}`,
      ),
    );
    return result;
  }

  const parsed = mcpServersFileSchema.safeParse(json);
  if (!parsed.success) {
    result.problems.push(...formatIssues(parsed.error.issues));
    return result;
  }

  for (const [name, entry] of Object.entries(parsed.data.mcpServers)) {
    const expand = (value: string, path: PropertyKey[]) => {
      const { value: expanded, missing } = expandVariables(value, options.environment);
      for (const variable of missing) {
        result.problems.push(
          `${formatPath(['mcpServers', name, ...path])} uses \${${variable}}, which is not set and has no default`,
        );
      }
      return expanded;
    };
    result.specs.push({
      name,
      command: entry.command,
      args: (entry.args ?? []).map((arg, i) => expand(arg, ['args', i])),
      env: Object.fromEntries(
        Object.entries(entry.env ?? {}).map(([key, value]) => [key, expand(value, ['env', key])]),
      ),
    });
  }
  if (result.problems.length > 0) result.specs = [];
  return result;
}

/**
 * "Object value expected after ':' at line 2, column 8". Node 20's JSON.parse often gives no
 * position at all, so the message comes from lossless-json's parser, which always has one.
 */
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
