import { execFile } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const ROOT_USER = process.getuid?.() === 0;

/** Debian's packages (what .ci/start-postgres.sh installs): /usr/lib/postgresql/<major>/bin. */
function binDir(): string | undefined {
  if (!existsSync('/usr/lib/postgresql')) return undefined;
  const majors = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  const bin = join('/usr/lib/postgresql', majors.at(-1) ?? '', 'bin');
  return existsSync(join(bin, 'pg_basebackup')) ? bin : undefined;
}
const BIN = binDir();
export const clusterToolsAvailable = BIN !== undefined;
if (!clusterToolsAvailable && process.env.REQUIRE_POSTGRES === '1') {
  throw new Error('REQUIRE_POSTGRES=1 but PostgreSQL is not installed (.ci/start-postgres.sh)');
}

/** PostgreSQL refuses to run as root: as .ci/start-postgres.sh does, run it as `postgres`. */
async function pgTool(tool: string, args: string[]): Promise<void> {
  const path = join(BIN ?? '', tool);
  if (ROOT_USER) await run('runuser', ['-u', 'postgres', '--', path, ...args]);
  else await run(path, args);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One PostgreSQL server of the test cluster, on 127.0.0.1 with trust authentication. */
export class PostgresServer {
  constructor(
    readonly name: string,
    readonly dataDir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(settings: string[] = []): Promise<void> {
    const options = ['-h 127.0.0.1', `-p ${this.port}`, `-k ${this.dataDir}`, ...settings];
    const log = `${this.dataDir}.log`;
    await pgTool('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      log,
      '-w',
      '-t',
      '60',
      '-o',
      options.join(' '),
      'start',
    ]);
  }

  /** The whole server at once, as when its pod dies: pg_ctl starts it in its own process group. */
  kill(): void {
    const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(-pid, 'SIGKILL');
  }

  async promote(): Promise<void> {
    await pgTool('pg_ctl', ['-D', this.dataDir, '-w', '-t', '60', 'promote']);
  }

  /**
   * A clean shutdown, as a switchover demotes the primary: sessions end (57P01) and the
   * standbys receive every WAL record, the shutdown checkpoint included, before it returns.
   */
  async shutDown(): Promise<void> {
    await pgTool('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  async stop(): Promise<void> {
    await pgTool('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', 'stop']).catch(() => {});
  }

  async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  }
}

/**
 * A primary, a synchronous standby (`sync`: what a CloudNativePG cluster with required data
 * durability promotes) and an asynchronous one (`lagging`: a server that stays in recovery),
 * both made with `pg_basebackup -R`. `primary` and `sync` trade places in a switchover.
 */
export class PostgresCluster {
  private constructor(
    private readonly root: string,
    public primary: PostgresServer,
    public sync: PostgresServer,
    readonly lagging: PostgresServer,
  ) {}

  static async start(): Promise<PostgresCluster> {
    const root = newRoot();
    const [p, s, l] = await Promise.all([freePort(), freePort(), freePort()]);
    const cluster = new PostgresCluster(
      root,
      new PostgresServer('pg1', join(root, 'pg1'), p),
      new PostgresServer('pg2', join(root, 'pg2'), s),
      new PostgresServer('lagging', join(root, 'lagging'), l),
    );
    await initdb(cluster.primary);
    await cluster.primary.start();
    for (const standby of [cluster.sync, cluster.lagging]) {
      const from = ['-h', '127.0.0.1', '-p', String(p), '-U', 'postgres'];
      await pgTool('pg_basebackup', [
        ...from,
        '-D',
        standby.dataDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
      ]);
      // The walreceiver names itself after cluster_name: what synchronous_standby_names lists.
      await standby.start([`-c cluster_name=${standby.name}`]);
    }
    await cluster.synchronously();
    return cluster;
  }

  /**
   * After a switchover (the primary shut down cleanly, the synchronous standby promoted):
   * the old primary follows the new one as its synchronous standby, as CloudNativePG rejoins
   * a demoted primary. A clean shutdown left it no WAL the new primary lacks: no pg_rewind.
   */
  async rejoinDemoted(): Promise<void> {
    const demoted = this.primary;
    [this.primary, this.sync] = [this.sync, demoted];
    const signal = join(demoted.dataDir, 'standby.signal');
    writeFileSync(signal, '');
    if (ROOT_USER) chownSync(signal, ...postgresIds());
    await demoted.start([
      `-c cluster_name=${demoted.name}`,
      `-c "primary_conninfo=host=127.0.0.1 port=${this.primary.port} user=postgres"`,
      // Its own setting from when it was the primary: promoted later, it would wait forever
      // for a standby that no longer exists.
      `-c "synchronous_standby_names="`,
    ]);
    await this.synchronously();
  }

  /** Commits on the primary wait for the `sync` standby's flush from now on. */
  private async synchronously(): Promise<void> {
    await this.primary.query(`alter system set synchronous_standby_names = '${this.sync.name}'`);
    await this.primary.query(`alter system set synchronous_commit = 'on'`);
    await this.primary.query('select pg_reload_conf()');
    const deadline = Date.now() + 30_000;
    const sql = `select 1 from pg_stat_replication where application_name = $1 and sync_state = 'sync'`;
    while ((await this.primary.query(sql, [this.sync.name])).length === 0) {
      if (Date.now() > deadline) throw new Error('the standby never became synchronous');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stop(): Promise<void> {
    await Promise.all([this.primary, this.sync, this.lagging].map((s) => s.stop()));
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * One primary of its own, for a test that fills or restarts it (e.g. with
 * `-c max_connections=6`); `remove` stops it and deletes its files.
 */
export async function startLoneServer(
  settings: string[] = [],
): Promise<{ server: PostgresServer; remove: () => Promise<void> }> {
  const root = newRoot();
  const server = new PostgresServer('lone', join(root, 'lone'), await freePort());
  await initdb(server);
  await server.start(settings);
  const remove = async () => {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  };
  return { server, remove };
}

function newRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'plant-store-cluster-'));
  if (ROOT_USER) chownSync(root, ...postgresIds());
  return root;
}

/** Without initdb's own fsync (seconds on a busy disk): the tests never lose the machine. */
const initdb = (server: PostgresServer) =>
  pgTool('initdb', ['-D', server.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync']);

function postgresIds(): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = (line ?? '').split(':');
  return [Number(uid), Number(gid)];
}
