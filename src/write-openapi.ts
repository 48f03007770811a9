import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { AppModule } from './app.module.js';
import { LosslessExpressAdapter } from './common/http/lossless-express.adapter.js';
import { loadConfig } from './config/load-config.js';
import { buildOpenApiDocument } from './openapi/openapi.js';

/**
 * `npm run openapi`: writes the document the app serves to ./openapi.json. An entry point
 * beside main.ts, since it needs the whole app. `preview: true` builds the module graph
 * without instantiating providers, so no database is opened.
 */
async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, SERVICE_CONFIG_DIR: '', API_TOKENS: 'x'.repeat(32) });
  const app = await NestFactory.create(
    AppModule.forRoot(config, pino({ level: 'silent' })),
    new LosslessExpressAdapter(),
    { preview: true, logger: false, abortOnError: false },
  );
  const document = JSON.stringify(buildOpenApiDocument(app), sortedKeys, 2);
  writeFileSync('openapi.json', `${document}\n`);
  await app.close();
}

/** Object keys sorted, so the committed document diffs cleanly. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .map((key) => [key, object[key]]),
  );
}

await main();
