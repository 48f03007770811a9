// The conformance suite's reference server over stdio, as the agent runs MCP servers. Its tools
// log with console.log, which would corrupt the JSON-RPC stream on stdout: stderr it is.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from './everything-server.ts';

console.log = console.error;
await createMcpServer().connect(new StdioServerTransport());
