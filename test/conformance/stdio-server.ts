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

// The reference server answers its input_required tools in its HTTP glue, as a 2026 server.
// Here they are 2025 tools asking their client, for the relay to turn into MRTR rounds; each
// names its request's key in `_meta`, where the relay takes it from.
const keyed = (key: string) => ({ _meta: { 'io.plantstore/inputKey': key } });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const ask = (key: string, field: string, type = 'string') =>
  server.server.elicitInput({
    mode: 'form',
    message: `Please provide ${field}`,
    requestedSchema: { type: 'object', properties: { [field]: { type } } },
    ...keyed(key),
  } as never);
const sample = (key: string, question: string) =>
  server.server.createMessage({
    messages: [{ role: 'user', content: { type: 'text', text: question } }],
    maxTokens: 100,
    ...keyed(key),
  });
const roots = (key: string) => server.server.listRoots(keyed(key));
const inputTools: Record<string, () => Promise<unknown>> = {
  elicitation: () => ask('user_name', 'name'),
  sampling: () => sample('sample_request', 'What is the capital of France?'),
  list_roots: () => roots('roots_request'),
  request_state: () => ask('confirm', 'ok', 'boolean'),
  tampered_state: () => ask('confirm', 'ok', 'boolean'),
  multiple_inputs: () =>
    Promise.all([ask('user_name', 'name'), sample('greeting', 'Say hello'), roots('client_roots')]),
  multi_round: async () => [await ask('step1', 'name'), await ask('step2', 'color')],
  capabilities: () =>
    Promise.allSettled([ask('user_name', 'name'), sample('sample_input', 'Say something')]),
};
// The reference server's probe of an undeclared capability: it needs sampling.
server.registerTool('test_missing_capability', { description: 'needs sampling' }, async () =>
  text(JSON.stringify(await sample('sample', 'Anything?'))),
);
for (const [name, asking] of Object.entries(inputTools)) {
  server.registerTool(`test_input_required_result_${name}`, { description: name }, async () =>
    text(JSON.stringify(await asking())),
  );
}
server.registerPrompt('test_input_required_result_prompt', { description: 'asks' }, async () => {
  const answer = await ask('user_context', 'context');
  const context = JSON.stringify(answer.content ?? {});
  return { messages: [{ role: 'user', content: { type: 'text', text: `Context: ${context}` } }] };
});
await server.connect(new StdioServerTransport());
