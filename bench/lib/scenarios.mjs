/** What a run measures: the scenarios, and which targets take part in each. */

/** Plants each seeded target gets before the first measured run (the GET runs read them). */
export const SEED_COUNT = 2_000;

export const SCENARIOS = [
  { id: 'post-c1', title: 'POST /plants, 1 connection', kind: 'post', connections: 1 },
  { id: 'post-c16', title: 'POST /plants, 16 connections', kind: 'post', connections: 16 },
  { id: 'post-c64', title: 'POST /plants, 64 connections', kind: 'post', connections: 64 },
  { id: 'get-c16', title: 'GET /plants/{id}, 16 connections', kind: 'get', connections: 16 },
  { id: 'mix-c16', title: '80% GET, 20% POST, 16 connections', kind: 'mix', connections: 16 },
];

/** Which scenarios each kind of target takes part in. */
export const ROLE_SCENARIOS = {
  service: () => true,
  'service-b': () => true,
  'raw-each': () => true,
  'raw-group': (s) => s.kind !== 'get', // the same server as raw-each for reads
  'nest-floor': () => true,
  'service-1m': (s) => s.id === 'post-c16',
  'json-server-empty': (s) => s.kind === 'post',
  'json-server-100k': (s) => s.kind === 'post',
  prism: (s) => s.kind === 'post',
};
