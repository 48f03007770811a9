/**
 * Baseline (a3), "nest-floor": the design's stack with nothing of ours in it but the storage
 * work. A bare NestJS 12 app on Express (@nestjs/platform-express) with the service's routes,
 * POST /plants and GET /plants/{id}, doing exactly raw-group's storage work (raw-server.mjs:
 * better-sqlite3 with WAL, synchronous=FULL and the exclusive lock, or a `pg` pool of 10;
 * prepared statements; group commit for inserts). Nothing else: no guard, no pipe, no
 * interceptor, no logger, no metrics, no Kysely, no lossless JSON. Nest's own JSON body parser
 * (express.json, 64 KiB as the service) and its own answers (404 from NotFoundException).
 *
 * It is the floor the service is measured against: what the framework and
 * the durable write cost on their own, so the ratio service / nest-floor is what ours costs.
 *
 * Plain JavaScript has no decorator syntax, so the decorators are applied by hand, as
 * TypeScript's compiled output does. Environment as raw-server.mjs: HOST, PORT, and DATA_DIR
 * (SQLite) or DATABASE_URL (PostgreSQL). GET /health answers 200 once the store is open.
 */
import 'reflect-metadata';
import { join } from 'node:path';
import {
  Body,
  ConflictException,
  Controller,
  Get,
  HttpCode,
  Module,
  NotFoundException,
  Param,
  Post,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { groupCommit, openPostgres, openSqlite } from './raw-server.mjs';

const env = process.env;
const store = env.DATABASE_URL
  ? await openPostgres(env.DATABASE_URL)
  : openSqlite(join(env.DATA_DIR ?? './data', 'plants.sqlite'));
const insert = groupCommit(store.insertBatch, store.concurrency);

class PlantsController {
  async create(body) {
    const plant = { id: BigInt(body.id), name: body.name, tag: body.tag };
    if ((await insert(plant)) === 'duplicate') {
      throw new ConflictException(`a plant with id ${plant.id} already exists`);
    }
    return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
  }

  async read(id) {
    const row = await store.get(BigInt(id));
    if (!row) throw new NotFoundException(`no plant with id ${id}`);
    // The bench's ids are safe integers: a plain number is exact, and Express's res.json
    // cannot write a bigint.
    const plant = { id: Number(row.id), name: row.name };
    if (row.tag !== null) plant.tag = row.tag;
    return plant;
  }

  health() {
    return { status: 'ok' };
  }
}

/** `@decorator` on a method, as tsc emits it. */
function method(cls, name, ...decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(cls.prototype, name);
  for (const decorate of decorators) decorate(cls.prototype, name, descriptor);
}
method(PlantsController, 'create', Post('plants'), HttpCode(200));
Body()(PlantsController.prototype, 'create', 0);
method(PlantsController, 'read', Get('plants/:id'));
Param('id')(PlantsController.prototype, 'read', 0);
method(PlantsController, 'health', Get('health'));
Controller()(PlantsController);

class FloorModule {}
Module({ controllers: [PlantsController] })(FloorModule);

const app = await NestFactory.create(FloorModule, { logger: false, bodyParser: false });
app.useBodyParser('json', { limit: '64kb' });
await app.listen(Number(env.PORT ?? 3000), env.HOST ?? '127.0.0.1');

const stop = () =>
  app
    .close()
    .then(() => store.close())
    .then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
