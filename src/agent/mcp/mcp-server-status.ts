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
  /** Stdout lines that were not JSON-RPC (dropped), and the restarts they caused. */
  stdoutGarbage: { lines: number; restarts: number };
  /** Answers to ids nobody waits for (dropped), and restarts for what nobody asked for. */
  unsolicited: { unknownAnswers: number; restarts: number };
  // No stderr lines here: this is shown on /health, unauthenticated and reachable from the
  // cluster, and a child's stderr may print its secrets. Stderr goes to the logs only.
}
