import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { AppModule } from './app.module.js';
import { LosslessExpressAdapter } from './common/http/lossless-express.adapter.js';
import { loadConfig } from './config/load-config.js';
import { buildOpenApiDocument } from './openapi/openapi.js';
import { stableStringify } from './openapi/stable-stringify.js';

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
  writeFileSync('openapi.json', `${stableStringify(buildOpenApiDocument(app))}\n`);
  await app.close();
}

await main();
