import { describe, expect, it } from 'vitest';
import { grantedAgents, subjectOf } from './token-grants.js';

const rules = {
  scopePrefix: 'mcp:agent:',
  agentsClaim: undefined,
  knownAgents: new Set(['shop', 'lab']),
};

describe('grantedAgents', () => {
  it.each([
    [{ scope: 'openid mcp:agent:shop' }, rules, ['shop']],
    [{ scope: 'mcp:agent:shop  mcp:agent:lab' }, rules, ['shop', 'lab']],
    [{ scp: ['mcp:agent:lab'] }, rules, ['lab']],
    [{ scope: 'mcp:agent:ghost mcp:agent:' }, rules, []],
    [{ scope: 'mcp:agent:shop' }, { ...rules, scopePrefix: 'relay/' }, []],
    [{ scope: 'relay/shop' }, { ...rules, scopePrefix: 'relay/' }, ['shop']],
    [{ agents: ['lab', 'ghost'] }, { ...rules, agentsClaim: 'agents' }, ['lab']],
    [{ agents: 'shop lab' }, { ...rules, agentsClaim: 'agents' }, ['shop', 'lab']],
    [{ agents: ['lab'] }, rules, []],
    [{ scope: 42 }, rules, []],
  ])('%j with %j grants %j', (payload, rule, agents) => {
    expect([...grantedAgents(payload, rule)]).toEqual(agents);
  });
});

describe('subjectOf', () => {
  it.each([
    [{ sub: 'alice', client_id: 'app' }, 'alice'],
    [{ client_id: 'app' }, undefined],
    [{ sub: '' }, undefined],
    [{}, undefined],
  ])('%j → %j', (payload, subject) => {
    expect(subjectOf(payload)).toBe(subject);
  });
});
