import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, newToken, tempDir } from './support/app-process.js';
import { call } from './support/http.js';

/**
 * The plant store stands on Core (config and logger), Database, Metrics, Auth and Plants alone:
 * no AgentModule (which once provided the plants' and auth's metrics through a global module).
 * The app is the built one (dist/): AppModule's own composition, asked for without the agent,
 * so a module the store comes to need cannot be missing from a copy here.
 */
const built = <T>(path: string): Promise<T> =>
  import(new URL(`dist/${path}`, `file://${ROOT}/`).href) as Promise<T>;

describe('the plant store without AgentModule', () => {
  let app: INestApplication;
  let apiUrl: string;
  const token = newToken();

  beforeAll(async () => {
    const { loadConfig } =
      await built<typeof import('../src/config/load-config.js')>('config/load-config.js');
    const { AppModule } = await built<typeof import('../src/app.module.js')>('app.module.js');
    const { LosslessExpressAdapter } = await built<
      typeof import('../src/common/http/lossless-express.adapter.js')
    >('common/http/lossless-express.adapter.js');

    const config = loadConfig({
      DATA_DIR: tempDir('no-agent'),
      SERVICE_CONFIG_DIR: '',
      API_TOKENS: token,
    });
    app = await NestFactory.create(
      AppModule.forRoot(config, pino({ level: 'silent' }), { agent: false }),
      new LosslessExpressAdapter(),
      { bodyParser: false, logger: false, abortOnError: false },
    );
    await app.listen(0, '127.0.0.1');
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    apiUrl = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await app?.close();
    // The features' metrics live in prom-client's default registry, one per process.
    register.clear();
  });

  it('has no agent in its module graph', async () => {
    const { McpSupervisorService } = await built<
      typeof import('../src/agent/mcp/mcp-supervisor.service.js')
    >('agent/mcp/mcp-supervisor.service.js');
    expect(() => app.get(McpSupervisorService, { strict: false })).toThrow();
  });

  it('creates a plant and reads it back over HTTP, behind the bearer guard', async () => {
    const body = '{"id": 7, "name": "Monstera", "tag": "aroid"}';
    expect((await call(`${apiUrl}/plants`, { method: 'POST', body })).status).toBe(401);

    const created = await call(`${apiUrl}/plants`, { method: 'POST', token, body });
    expect(created.status).toBe(200);
    expect(created.text).toBe('{"name":"Monstera","tag":"aroid"}');

    const read = await call(`${apiUrl}/plants/7`, { token });
    expect(read.status).toBe(200);
    expect(read.text).toBe('{"id":7,"name":"Monstera","tag":"aroid"}');
  });

  it('counts the plant in its own plants_created_total', async () => {
    const metric = await register.getSingleMetricAsString('plants_created_total');
    expect(metric).toMatch(/^plants_created_total 1$/m);
  });
});
