/**
 * What the documentation's router layers cost an API request: the layers a build's
 * serveOpenApi adds to the app's Express router (Swagger UI's routes and assets, the documents,
 * GET /: ten), walked in front of a GET /plants/:id route, in-process, 300,000 requests a
 * round, 7 rounds; main-thread CPU per request, median. Compare builds:
 *
 *   node bench/route-walk.mjs <dist> [<dist> ...]   (each a built dist/ with package.json beside it)
 *
 * Run with the targets' Node (Node 24: ~/.cache/plant-store-tools/node24/node_modules/node/bin/node).
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from './lib/paths.mjs';

// The checkout's Express 5 (the service's), not bench/node_modules' (json-server's Express 4).
const { Router } = createRequire(join(ROOT, 'package.json'))('express');
for (const build of process.argv.slice(2)) await measure(build);

async function measure(build) {
  const { serveOpenApi, buildOpenApiDocument } = await import(`${build}/openapi/openapi.js`);
  const { LosslessExpressAdapter } = await import(
    `${build}/common/http/lossless-express.adapter.js`
  );
  class M {}
  Module({})(M);
  const app = await NestFactory.create(M, new LosslessExpressAdapter(), {
    logger: false,
    bodyParser: false,
  });
  const stack = app.getHttpAdapter().getInstance().router.stack;
  const before = stack.length;
  serveOpenApi(app, buildOpenApiDocument(app));
  const added = stack.slice(before);
  const router = Router();
  let hits = 0;
  router.get('/plants/:id', () => {
    hits++;
  });
  router.stack.unshift(...added);
  const N = 300_000;
  const walk = () => {
    for (let i = 0; i < N; i++)
      router.handle({ method: 'GET', url: '/plants/123456789', headers: {} }, {}, () => {
        throw new Error('not routed');
      });
  };
  walk();
  const rounds = [];
  for (let r = 0; r < 7; r++) {
    const t = process.cpuUsage();
    walk();
    const u = process.cpuUsage(t);
    rounds.push((u.user + u.system) / N);
  }
  rounds.sort((a, b) => a - b);
  console.log(
    `${build}: ${added.length} docs layer(s); routing GET /plants/:id through them: median ${rounds[3].toFixed(3)} us (rounds ${rounds.map((x) => x.toFixed(2)).join(' ')}), hits ${hits}`,
  );
  await app.close();
}
