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
  /**
   * Stdout lines that were not JSON-RPC messages (dropped), and the restarts they caused (a
   * child that keeps writing them is restarted), since the agent started.
   */
  stdoutGarbage: { lines: number; restarts: number };
  /**
   * Answers to request ids nobody waits for (dropped), and the restarts caused by messages
   * nobody asked for (those answers, or notifications over a generous rate), since the agent
   * started.
   */
  unsolicited: { unknownAnswers: number; restarts: number };
  // No stderr lines here: this is shown on /health, unauthenticated and reachable from the
  // cluster, and a child's stderr may print its secrets. Stderr goes to the logs only.
}
