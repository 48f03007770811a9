import {
  Controller,
  Delete,
  Get,
  Inject,
  NotAcceptableException,
  NotFoundException,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { ClientAuthGuard } from '../auth/client-auth.guard.js';
import type { ClientRequest } from '../auth/client-request.js';
import { OriginGuard } from '../auth/origin.guard.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { isObject, JsonRpcCode, jsonRpcError } from '../json-rpc/json-rpc.js';
import { McpRelayService } from './stateful/mcp-relay.service.js';
import {
  answerOf,
  type RelayAnswer,
  type RelayTarget,
  writeAnswer,
} from './sessions/relay-target.js';
import { OtherReplicas } from './sessions/other-replicas.js';
import { acceptsEventStream, encodeEvent, LazyEventStream } from './streams/lazy-event-stream.js';
import { ReplayBuffer, type ReplayDrop, requestOf } from './streams/replay-buffer.js';
import { SessionStore } from './sessions/session-store.service.js';
import { StreamBudget } from './streams/stream-budget.js';
import { StatelessRelay } from './stateless/stateless-relay.service.js';
import { isStateless } from './stateless/stateless-wire.js';
import { heldBy } from './stateless/input-required.js';
import { InvalidBody, readJsonBody } from './read-json-body.js';

const LOST = 'the answer to this request is no longer kept (delivered, or pushed out): retry';
/** `mcp/<agent>/<server>` (one MCP server) and `mcp/<agent>` (the aggregate endpoint). */
const ROUTES = [':server', '/'];

/** An agent the client may not reach gets the same 404 as one that does not exist. */
@UseGuards(OriginGuard, ClientAuthGuard)
@Controller('mcp/:agent')
export class McpController {
  private readonly overLog: RateLimitedLog;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) logger: Logger,
    private readonly relay: McpRelayService,
    private readonly stateless: StatelessRelay,
    private readonly budget: StreamBudget,
    private readonly peers: OtherReplicas,
    private readonly sessions: SessionStore,
    @InjectMetric('relay_progress_dropped_total') private readonly dropped: Counter<'agent'>,
    @InjectMetric('relay_mcp_event_streams') private readonly streams: Gauge<'agent'>,
    @InjectMetric('relay_event_streams_closed_total')
    private readonly closed: Counter<'agent' | 'budget'>,
    @InjectMetric('relay_unread_refusals_total')
    private readonly refused: Counter<'agent' | 'budget'>,
    @InjectMetric('relay_replay_dropped_total')
    private readonly replayDropped: Counter<'agent' | 'reason'>,
  ) {
    this.overLog = new RateLimitedLog(logger);
  }

  @Post(ROUTES)
  async post(@Req() request: ClientRequest, @Res() response: Response): Promise<void> {
    const target = this.target(request);
    const message = await readJsonBody(request, this.config.maxFrameBytes);
    // A malformed body gets its 400 first, so it never counts as a refusal for unread answers.
    const refused =
      message instanceof InvalidBody ? message.answer : this.refuseWhileUnread(target);
    if (refused) {
      writeAnswer(response, refused);
      return;
    }
    // MCP 2026-07-28 (no session; an envelope in `_meta`) is translated; 2025 is forwarded.
    const protocolVersion = header(request, 'mcp-protocol-version');
    const modern = isStateless(message, protocolVersion);
    if (modern) target.heldBy = heldBy(message);
    if (await this.peers.handled(request, response, target, message)) return;
    // A listen stream only carries notifications, like GET; a request's carries its answer.
    const listens = isObject(message) && message.method === 'subscriptions/listen';
    const stream = acceptsEventStream(request)
      ? this.eventStream(response, target, listens)
      : undefined;
    const resumable =
      stream && !modern ? this.resumable(target, request, message, stream) : undefined;
    const hungUp = new AbortController();
    // Hanging up cancels the request, unless its client holds an event id to resume it with.
    response.once('close', () => {
      if (!response.writableFinished && !(resumable && stream?.started)) hungUp.abort();
    });
    const sink = resumable?.sink ?? stream?.sink;
    const name = header(request, 'mcp-name');
    const headers = { protocolVersion, method: header(request, 'mcp-method'), name };
    const answer = modern
      ? await this.stateless.post(target, message, headers, hungUp.signal, sink)
      : await this.relay.post(target, message, hungUp.signal, sink);
    // A session other replicas cannot find would get 404 there: it is not handed out.
    if (answer.sessionId !== undefined && !(await this.peers.recorded(answer.sessionId, target))) {
      this.relay.end({ ...target, sessionId: answer.sessionId });
      writeAnswer(response, this.peers.unavailable(message));
      return;
    }
    if (resumable?.finish(answer.body)) return;
    if (stream?.started) stream.end(answer.body && encodeEvent(answer.body));
    else writeAnswer(response, answer, { budget: this.budget, client: target.client });
  }

  /** The session's stream of notifications about no request, open until something ends it. */
  @Get(ROUTES)
  async stream(@Req() request: ClientRequest, @Res() response: Response): Promise<void> {
    const target = this.target(request);
    if (await this.peers.handled(request, response, target)) return;
    if (!acceptsEventStream(request)) {
      throw new NotAcceptableException('the event stream needs Accept: text/event-stream');
    }
    const replay = this.replayOf(target);
    const lastEventId = header(request, 'last-event-id');
    const id = lastEventId === undefined ? undefined : requestOf(lastEventId);
    if (replay && lastEventId !== undefined && id !== undefined) {
      // Nothing follows an answer: 204 holds no connection, and SDK clients stop on no body.
      if (replay.complete(lastEventId)) {
        response.status(204).end();
        return;
      }
      // A request's stream resumed: what it missed, then the rest; an error once it is gone.
      const events = this.eventStream(response, target, false);
      if (replay.resume(lastEventId, events)) return;
      this.replayDropped.inc({ agent: target.agent, reason: 'resume' });
      replay.lost(lastEventId, events, jsonRpcError(id, RelayErrorCode.ServerUnavailable, LOST));
      return;
    }
    const events = this.eventStream(response, target, true);
    const opened = this.relay.openStream(target, {
      send: (event) => (replay ? replay.send(replay.listen, event) : events.send(event)),
      end: () => events.end(),
    });
    if (opened.answer) {
      writeAnswer(response, opened.answer);
      return;
    }
    events.start();
    if (replay && !(lastEventId !== undefined && replay.resume(lastEventId, events))) {
      replay.open(events, primes(request));
    }
    this.streams.inc({ agent: target.agent });
    response.once('close', () => {
      this.streams.dec({ agent: target.agent });
      opened.close?.();
    });
  }

  @Delete(ROUTES)
  async end(@Req() request: ClientRequest, @Res() response: Response): Promise<void> {
    const target = this.target(request);
    if (await this.peers.handled(request, response, target)) return;
    // Ending the session also ends its record in Redis (the session store's end hook).
    writeAnswer(response, this.relay.end(target));
  }

  // A call may run long: its stream opens with its priming event once the call is on its way
  // (refusals keep their HTTP status).
  private resumable(
    target: RelayTarget,
    request: ClientRequest,
    message: unknown,
    stream: LazyEventStream,
  ) {
    const replay = this.replayOf(target);
    const key = replay?.open(stream, primes(request), message);
    if (!replay || key === undefined) return undefined;
    if (isObject(message) && message.method === 'tools/call') {
      // Answered by then (as JSON, or a refusal with its status), the stream is gone: no-op.
      setImmediate(() => replay.start(key));
    }
    return {
      sink: (notification: unknown) => replay.send(key, encodeEvent(notification)),
      finish: (body: unknown) => replay.finish(key, body),
    };
  }

  /** The session's buffer of what its streams sent, for resumes; undefined without one. */
  private replayOf(target: RelayTarget): ReplayBuffer | undefined {
    const session = this.sessions.find(target);
    if (!session) return undefined;
    const { agent, client } = target;
    const onDropped = (reason: ReplayDrop) => this.replayDropped.inc({ agent, reason });
    const limit = this.config.streamReplayBytes;
    session.replay ??= new ReplayBuffer(limit, this.budget, client, onDropped);
    return session.replay;
  }

  // Past a StreamBudget a notification-only stream (GET, listen) is closed, telling its client it
  // missed something; a request's stream drops progress instead and still gets its answer.
  private eventStream(response: Response, { agent, client }: RelayTarget, closeWhenOver: boolean) {
    return new LazyEventStream(response, this.budget, client, (budget) => {
      if (!closeWhenOver) {
        this.dropped.inc({ agent });
        return;
      }
      this.closed.inc({ agent, budget });
      this.overLog.warn(
        { agent, client, budget },
        'closing an event stream whose client is not reading it: over its buffer budget',
      );
      response.destroy();
    });
  }

  /** A client whose answers wait unread past a budget gets no new request in (429, -32005). */
  private refuseWhileUnread({ agent, client }: RelayTarget): RelayAnswer | undefined {
    const budget = this.budget.exhausted(client);
    if (budget === undefined) return undefined;
    this.refused.inc({ agent, budget });
    this.overLog.warn({ agent, client, budget }, 'refusing a request: its client is not reading');
    const refusal =
      'too many bytes of answers and events wait for this client to read them; retry later';
    return answerOf(jsonRpcError(null, JsonRpcCode.Overloaded, refusal));
  }

  private target(request: ClientRequest): RelayTarget {
    const { agent = '', server } = request.params as { agent?: string; server?: string };
    const client = request.relayClient;
    if (!client?.agents.has(agent)) throw new NotFoundException('no such MCP endpoint');
    const sessionId = header(request, 'mcp-session-id') || undefined;
    return { client: client.name, agent, server, sessionId };
  }
}

/** Priming events carry an empty `data`, which clients before 2025-11-25 cannot read. */
function primes(request: ClientRequest): boolean {
  return (header(request, 'mcp-protocol-version') ?? '') >= '2025-11-25';
}

function header(request: ClientRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}
