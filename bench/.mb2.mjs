// in-process: main-thread CPU per plant of the webhook path (SQLite), no HTTP server
import { mkdtempSync, readFileSync } from 'node:fs'; import { tmpdir } from 'node:os'; import { join } from 'node:path';
import { createServer } from 'node:http'; import { spawn } from 'node:child_process';
import { sql } from 'kysely'; import client from 'prom-client';
const D = process.env.DIST ?? '/work/wt-webhook-cost/dist';
const { openSqlite } = await import(D+'/database/sqlite.connection.js');
const { migrateToLatest } = await import(D+'/database/migrate.js');
const { WebhookOutboxRepository } = await import(D+'/webhooks/webhook-outbox.repository.js');
const { WebhookDispatcher } = await import(D+'/webhooks/webhook-dispatcher.service.js');
const { Secret } = await import(D+'/config/secret.js');
const mode = process.argv[2];
const recv = spawn(process.execPath, ['-e', `require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.writeHead(204).end())}).listen(45999,'127.0.0.1',()=>console.log('up'))`], {stdio:['ignore','pipe','inherit']});
await new Promise(r=>recv.stdout.once('data',r));
const dir = mkdtempSync(join(tmpdir(),'mb-'));
const { db } = openSqlite(join(dir,'x.db'), dir);
const log = { info(){}, warn(){}, debug(){}, child(){return this} };
await migrateToLatest(db, log);
await sql`PRAGMA synchronous = OFF`.execute(db);
const receivers = mode === 'none' ? [] : [{ id: 'r0', host: '127.0.0.1:45999', url: new Secret('http://127.0.0.1:45999/x'), keys: new Secret([Buffer.alloc(32, 1)]) }];
const config = { database: { kind: 'sqlite' }, webhooks: { receivers, retrySchedule: [5, 300] } };
const repo = new WebhookOutboxRepository(db, config);
const m = (C, o) => new C({ ...o, registers: [] });
const disp = new WebhookDispatcher(repo, config, log,
  m(client.Counter, {name:'a', help:'a', labelNames:['receiver','outcome']}),
  m(client.Counter, {name:'b', help:'b', labelNames:['receiver','result']}),
  m(client.Histogram, {name:'c', help:'c', labelNames:['receiver']}),
  m(client.Gauge, {name:'d', help:'d'}), m(client.Gauge, {name:'e', help:'e'}));
if (mode !== 'outbox') await disp.onApplicationBootstrap();
const q16 = db.insertInto('plants').values(Array.from({length:16},()=>({id:0n,name:'',tag:null}))).onConflict(c=>c.column('id').doNothing()).returning('id').compile();
let id = 1n;
async function commit() {
  const ps = Array.from({length:16},()=>({id:id++, name:'bench plant', tag:'b'}));
  const query = {...q16, parameters: ps.flatMap(p=>[p.id,p.name,p.tag])};
  if (!repo.enabled) { await db.executeQuery(query); return; }
  const w = await db.transaction().execute(async trx => { const {rows} = await trx.executeQuery(query); const ids = new Set(rows.map(r=>BigInt(r.id))); return repo.insertEvents(trx, ps.filter(p=>ids.has(p.id))); });
  repo.committed(w);
}
const mainCpu = () => { const f = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`,'utf8').split(') ')[1].split(' '); return (Number(f[11])+Number(f[12]))*10000; };
// 500 commits/s pacing: like a service at 8000 plants/s? use setImmediate between commits
for (let i=0;i<100;i++) await commit();
const N = Number(process.env.N ?? 3000);
const c0 = mainCpu(), p0 = process.cpuUsage(), t0 = performance.now();
for (let i=0;i<N;i++) { await commit(); await new Promise(r=>setTimeout(r, 1)); }
const c1 = mainCpu(), p1 = process.cpuUsage(p0);
console.log(mode, 'main-thread us per plant', ((c1-c0)/(N*16)).toFixed(1), 'process us per plant', ((p1.user+p1.system)/(N*16)).toFixed(1));
await disp.beforeApplicationShutdown();
recv.kill(); process.exit(0);
