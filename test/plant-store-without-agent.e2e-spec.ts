import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Module, type INestApplication } from '@nestjs/common';
import { APP_FILTER, APP_PIPE, NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, newToken, tempDir } from './support/app-process.js';
import { call } from './support/http.js';

/**
 * The plant store stands on Core (config and logger), Database, Auth and Plants alone: no AgentModule
 * (which once provided the plants' and auth's metrics through a global module). The modules
 * are the built ones (dist/), wired here the way AppModule wires them, minus the agent.
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
    const { APP_CONFIG } =
      await built<typeof import('../src/config/app-config.js')>('config/app-config.js');
    const { CoreModule } = await built<typeof import('../src/common/core/core.module.js')>(
      'common/core/core.module.js',
    );
    const { DatabaseModule } = await built<typeof import('../src/database/database.module.js')>(
      'database/database.module.js',
    );
    const { AuthModule } =
      await built<typeof import('../src/auth/auth.module.js')>('auth/auth.module.js');
    const { PlantsModule } =
      await built<typeof import('../src/plants/plants.module.js')>('plants/plants.module.js');
    const { ApiValidationPipe } = await built<
      typeof import('../src/common/validation/validation.pipe.js')
    >('common/validation/validation.pipe.js');
    const { AllExceptionsFilter } = await built<
      typeof import('../src/common/errors/all-exceptions.filter.js')
    >('common/errors/all-exceptions.filter.js');
    const { LosslessExpressAdapter } = await built<
      typeof import('../src/common/http/lossless-express.adapter.js')
    >('common/http/lossless-express.adapter.js');

    const config = loadConfig({
      DATA_DIR: tempDir('no-agent'),
      SERVICE_CONFIG_DIR: '',
      API_TOKENS: token,
    });
    class PlantStoreOnly {}
    Module({
      imports: [
        CoreModule.forRoot(APP_CONFIG, config, pino({ level: 'silent' })),
        DatabaseModule,
        AuthModule,
        PlantsModule,
      ],
      providers: [
        { provide: APP_PIPE, useClass: ApiValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
    })(PlantStoreOnly);

    app = await NestFactory.create(PlantStoreOnly, new LosslessExpressAdapter(), {
      bodyParser: false,
      logger: false,
      abortOnError: false,
    });
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
