// The conformance suite's reference server over stdio, as the agent runs MCP servers. Its tools
// log with console.log, which would corrupt the JSON-RPC stream on stdout: stderr it is.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from './everything-server.ts';

console.log = console.error;
const server = createMcpServer();
// The reference server's HTTP glue has these two hooks; over stdio they are real list changes.
const triggers = {
  tool: () => server.sendToolListChanged(),
  prompt: () => server.sendPromptListChanged(),
};
for (const [kind, trigger] of Object.entries(triggers)) {
  server.registerTool(
    `test_trigger_${kind}_change`,
    { description: `Sends ${kind}s/list_changed` },
    () => {
      trigger();
      return { content: [{ type: 'text', text: 'Mutation triggered' }] };
    },
  );
}
await server.connect(new StdioServerTransport());
