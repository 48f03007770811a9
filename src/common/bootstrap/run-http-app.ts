import { createServer, type Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { boundPort } from '../http/bound-port.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import type { PortScope } from '../http/port-scope.js';
import { startUpLogger } from '../logging/start-up-logger.js';
import {
  connectionLimiter,
  type EntryPointConfig,
  exitCannotListen,
  type Limiter,
  type ListenerLimits,
  listenNamed,
  namingPort,
  startProcess,
  stopOnSignals,
} from './process-lifecycle.js';

/** A process's listeners (by default api, health and metrics); a port of 0 is any free one. */
export interface Listeners<P extends Partial<PortScope> = PortScope> {
  host: string;
  ports: P;
  /** The variable that sets each port, named when that port cannot be listened on. */
  portVariables: Record<keyof P, string>;
}

/** What differs between the entry points (the plant service, the relay server). */
export interface HttpEntryPoint<C extends EntryPointConfig> {
  /** Validates the environment (only config and the entry points read process.env). */
  loadConfig(): C;
  createApp(config: C, logger: Logger): Promise<NestExpressApplication>;
  /** Set-up before listening; `ports` gives the bound ports once each listener is up. */
  configure?(app: NestExpressApplication, config: C, ports: () => PortScope): void;
  listeners(config: C): Listeners;
  /** The start-up line once every port listens: with a port of 0, where a caller learns it. */
  announce(app: NestExpressApplication, config: C, logger: Logger, ports: PortScope): void;
  /**
   * On a signal, before the drain waits for the requests in flight: what would hold them (the
   * relay's agent connections, whose waiting clients are answered when they close).
   */
  beforeDrain?(app: NestExpressApplication): void | Promise<void>;
  /** Caps on each listener's connections and what counts refusals; none without it. */
  connectionLimits?(app: NestExpressApplication, config: C): ListenerLimits;
}

/**
 * The one bootstrap of every HTTP entry point: config (exit 78), app (exit 1 if it cannot
 * start), every port listening with the server limits (exit 1 if one is taken), the start-up
 * line, and a graceful stop on SIGTERM, SIGINT and SIGHUP.
 */
export async function runHttpApp<C extends EntryPointConfig>(
  entry: HttpEntryPoint<C>,
): Promise<void> {
  const started = await startProcess(
    () => entry.loadConfig(),
    (config, logger) => entry.createApp(config, logger),
  );
  if (!started) return;
  const { config, logger, app } = started;
  const listeners = entry.listeners(config);
  const configured = listeners.ports;
  const ports: PortScope = { ...configured };
  entry.configure?.(app, config, () => ports);

  const limit = connectionLimiter(entry.connectionLimits?.(app, config), logger);
  const extra = await listenOnEveryPort(app, listeners, ports, limit, logger);
  entry.announce(
    app,
    config,
    startUpLogger(logger, [configured.api, configured.health, configured.metrics]),
    { ...ports },
  );
  const drain = new ConnectionDrain([app.getHttpServer(), ...extra]);
  stopOnSignals(app, drain, logger, () => entry.beforeDrain?.(app));
}

/** Listens on every port, writing the bound ones into `ports`; exits 1 if one cannot be had. */
async function listenOnEveryPort(
  app: NestExpressApplication,
  { host, ports: configured, portVariables }: Listeners,
  ports: PortScope,
  limit: Limiter,
  logger: Logger,
): Promise<Server[]> {
  const on = (listener: keyof PortScope) => ({
    port: configured[listener],
    host,
    variable: portVariables[listener],
  });
  try {
    limit.api(app.getHttpServer());
    // Nest's own listen: it also runs the modules' init and bootstrap hooks.
    await app.listen(configured.api, host).catch(namingPort(on('api')));
    ports.api = boundPort(app.getHttpServer());
    return await Promise.all(
      (['health', 'metrics'] as const).map(async (listener) => {
        const server = createServer(app.getHttpAdapter().getInstance());
        limit.probe(server);
        await listenNamed(server, on(listener));
        ports[listener] = boundPort(server);
        return server;
      }),
    );
  } catch (error) {
    return exitCannotListen(app, error, logger);
  }
}
