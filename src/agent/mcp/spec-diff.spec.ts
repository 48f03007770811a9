import { describe, expect, it } from 'vitest';
import type { McpServerSpec } from '../../config/mcp-servers.schema.js';
import { diffSpecs } from './spec-diff.js';

const spec = (name: string, over: Partial<McpServerSpec> = {}): McpServerSpec => ({
  name,
  command: 'node',
  args: ['server.js'],
  env: {},
  instances: 'shared',
  maxInstances: 3,
  instanceIdleSeconds: 300,
  ...over,
});

describe('diffSpecs', () => {
  it('sorts servers into added, removed and changed, leaving out the unchanged', () => {
    const diff = diffSpecs(
      [spec('keep'), spec('gone'), spec('args'), spec('env', { env: { A: '1' } })],
      [
        spec('keep'),
        spec('new'),
        spec('args', { args: ['other.js'] }),
        spec('env', { env: { A: '2' } }),
      ],
    );
    expect(diff.added.map((s) => s.name)).toEqual(['new']);
    expect(diff.removed).toEqual(['gone']);
    expect(diff.changed.map((s) => s.name)).toEqual(['args', 'env']);
  });

  it('sees a changed command and ignores key order in env', () => {
    const diff = diffSpecs(
      [spec('a', { env: { X: '1', Y: '2' } }), spec('b')],
      [spec('a', { env: { Y: '2', X: '1' } }), spec('b', { command: 'npx' })],
    );
    expect(diff.changed.map((s) => s.name)).toEqual(['b']);
  });
});
