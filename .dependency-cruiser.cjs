// The module boundaries of src/ (README.md, "Architecture"), checked by `npm run lint`.
// Intended arrows: Plants -> Webhooks, Database, Common; Webhooks -> Database, Config, Common;
// Auth -> Config, Common; Agent -> Config, Common, AgentProtocol, Database (the health ping
// only), Webhooks (the health indicator only); Database -> Config, Common; Common -> Config;
// AgentProtocol -> Common; Config -> nothing of ours; the relay server -> Common, AgentProtocol
// and Config's shared kit (config/shared/), its folders in layers; the entry points (main.ts,
// app.module.ts, write-openapi.ts, webhook-worker/, relay-server/main.ts) -> everything.
// Each rule below is one arrow that must never exist; its name is what a failing lint prints.
// (`process.env` outside src/config and the entry points is an eslint rule: eslint.config.js.)
const FEATURES =
  '^src/(plants|auth|agent|agent-protocol|database|webhooks|webhook-worker|relay-server|openapi)/';
/** The files each process starts from, which import everything and nothing imports back. */
const ENTRY_POINTS = [
  '^src/(main|app\\.module|write-openapi)\\.ts$',
  '^src/(webhook-worker|relay-server)/main\\.ts$',
];

// The relay server's folders are layers, bottom first: each imports only the ones before it,
// so no two folders import each other. mcp/ is layers too, its own files (the controller) on
// top. The MCP relaying reaches the cluster through the abstract classes of
// mcp/sessions/other-replicas.ts; peers authenticate in the cluster, whose guard main.ts runs
// before every controller's. The entry files wire them.
const RELAY_LAYERS = [
  'config/',
  'metrics/',
  'json-rpc/',
  'auth/',
  'agents/',
  'mcp/streams/',
  'mcp/sessions/',
  'mcp/aggregate/',
  'mcp/stateful/',
  'mcp/stateless/',
  'mcp/[^/]+$',
  'cluster/',
  'health/',
];
const layerName = (layer) => layer.replace('/[^/]+$', '').replace(/\/$/, '');
const relayLayerRules = RELAY_LAYERS.map((layer, i) => ({
  name: `relay-${layerName(layer).replace('/', '-')}-not-up`,
  comment: `Inside the relay server, ${layerName(layer)} imports only the layers below it: ${RELAY_LAYERS.slice(0, i).map(layerName).join(', ') || 'none'}.`,
  severity: 'error',
  from: { path: `^src/relay-server/${layer}` },
  to: {
    path: [
      `^src/relay-server/(${RELAY_LAYERS.slice(i + 1).join('|') || '-'})`,
      '^src/relay-server/[^/]+\\.ts$',
    ],
  },
}));

// A folder outside the list would escape every rule above: it must join the list first.
relayLayerRules.push({
  name: 'relay-folder-in-a-layer',
  comment: 'Each relay-server folder is a layer of RELAY_LAYERS: add a new one to the list.',
  severity: 'error',
  from: {
    path: '^src/relay-server/',
    pathNot: [`^src/relay-server/(${RELAY_LAYERS.join('|')})`, '^src/relay-server/[^/]+\\.ts$'],
  },
  to: {},
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    // The entry points sit on top: nothing in a folder of src/ imports them back.
    {
      name: 'nothing-up-to-entry-points',
      comment:
        'The entry points (main.ts, app.module.ts, write-openapi.ts, webhook-worker/main.ts, relay-server/main.ts) wire the features; a feature that imports one turns the house upside down.',
      severity: 'error',
      from: { path: '^src/[^/]+/' },
      to: { path: ENTRY_POINTS },
    },
    {
      name: 'plants-not-to-agent',
      comment: 'Plants must not need the agent: the plant store runs without AgentModule.',
      severity: 'error',
      from: { path: '^src/plants/' },
      to: { path: '^src/agent/' },
    },
    {
      name: 'agent-not-to-plants',
      comment: 'The agent supervises MCP servers and checks the database; it knows no plants.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: { path: '^src/plants/' },
    },
    {
      name: 'common-not-to-features',
      comment:
        'common/ is what every feature stands on; a feature type it needs belongs in common/ (or is inverted: ServiceUnavailableError).',
      severity: 'error',
      from: { path: '^src/common/' },
      to: { path: [FEATURES, ...ENTRY_POINTS] },
    },
    {
      name: 'database-not-to-plants',
      comment: 'The database layer knows connections and migrations, not the plants feature.',
      severity: 'error',
      from: { path: '^src/database/' },
      to: { path: '^src/plants/' },
    },
    {
      name: 'webhooks-not-to-plants',
      comment:
        'The plants feature writes the outbox in its commit; the webhook knows the NewPlant payload only, not the plants feature.',
      severity: 'error',
      // The outbox's spec drives it through the plants repository that writes it.
      from: { path: '^src/webhooks/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/(plants|auth|agent|openapi)/' },
    },
    {
      name: 'database-not-to-webhooks',
      comment: 'The database layer holds the outbox table, not the delivery.',
      severity: 'error',
      from: { path: '^src/database/' },
      to: { path: '^src/webhooks/' },
    },
    {
      name: 'agent-to-webhooks-health-only',
      comment: 'The agent shows the webhook backlog in /health, and nothing more of it.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: {
        path: '^src/webhooks/',
        pathNot: '^src/webhooks/(webhook\\.health|webhooks\\.module)\\.ts$',
      },
    },
    {
      name: 'config-not-to-database',
      comment: 'Config is validated before anything else exists; it depends on no feature.',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/database/' },
    },
    {
      name: 'config-not-to-features',
      comment:
        'Config stands on nothing of ours: it is loaded first (it parses API_TOKENS itself).',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: [FEATURES, '^src/common/'] },
    },
    {
      name: 'auth-only-to-config-and-common',
      comment: 'Auth -> Config, Common.',
      severity: 'error',
      from: { path: '^src/auth/' },
      to: { path: '^src/(plants|agent|database|webhooks|relay-server)/' },
    },
    {
      name: 'agent-not-to-auth',
      comment: 'Agent -> Config, Database, Common: @Public lives in common/auth.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: { path: '^src/(auth|openapi)/' },
    },
    {
      name: 'agent-to-database-ping-only',
      comment: 'The agent reads the database only through its health ping.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: {
        path: '^src/database/',
        pathNot: '^src/database/database(-ping\\.service|\\.health)\\.ts$',
      },
    },
    {
      name: 'relay-server-not-to-app-features',
      comment:
        'The relay server is its own process: Common and Config only (the agent protocol is in agent-protocol).',
      severity: 'error',
      from: { path: '^src/relay-server/' },
      to: { path: '^src/(plants|auth|agent|database|webhooks|openapi)/' },
    },
    {
      name: 'relay-server-to-shared-config-only',
      comment:
        "The relay server has its own config; it shares only config/shared/ (the package version too) with the service's.",
      severity: 'error',
      from: { path: '^src/relay-server/' },
      to: { path: '^src/config/', pathNot: '^src/config/shared/' },
    },
    {
      name: 'agent-protocol-only-to-common',
      comment:
        'The agent protocol is the contract between two processes: it stands on Common only.',
      severity: 'error',
      from: { path: '^src/agent-protocol/' },
      to: {
        path: [FEATURES, '^src/config/', ...ENTRY_POINTS],
        pathNot: '^src/agent-protocol/',
      },
    },
    ...relayLayerRules,
    {
      name: 'redis-client-in-cluster-only',
      comment:
        'Only the cluster folder talks to Redis (ioredis is loaded only with RELAY_REDIS_URL).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/relay-server/cluster/' },
      to: { path: 'node_modules/ioredis/' },
    },
    {
      name: 'app-not-to-relay-server',
      comment: 'Nothing of the plant store or the agent needs the relay server.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/relay-server/' },
      to: { path: '^src/relay-server/' },
    },
    {
      name: 'no-circular',
      comment: 'Files that import each other in a loop.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
