/** What `/health` and the relay's inventory show about one supervised MCP server. */
export type McpServerState = 'starting' | 'up' | 'down' | 'crash-looping';

export interface McpServerStatus {
  name: string;
  state: McpServerState;
  /** The child's pid while it runs. */
  pid: number | null;
  /** Restarts after a failure (exit, failed ping, failed start) since the agent started. */
  restarts: number;
  tools: number;
  resources: number;
  prompts: number;
  lastError: string | null;
  /** The child's last stderr lines, oldest first. */
  lastStderr: string[];
}

/** A tool as the agent's server sees it in `hello` and `inventory`. */
export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: unknown;
}
