import {
  Controller,
  Delete,
  Get,
  HttpStatus,
  NotFoundException,
  Param,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import type { Counter, Gauge } from 'prom-client';
import { HttpExceptionWithHeaders } from '../../common/errors/http-exception-with-headers.js';
import { ClientAuthGuard, type ClientRequest } from '../auth/client-auth.guard.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { Inject } from '@nestjs/common';
import { INEXACT_ID } from './exact-ids.js';
import { JsonRpcCode, jsonRpcError, stringifyMessage } from './json-rpc.js';
import { McpRelayService, type RelayAnswer, type RelayTarget } from './mcp-relay.service.js';
import { acceptsEventStream, LazyEventStream } from './lazy-event-stream.js';
import { StatelessRelay } from './stateless/stateless-relay.service.js';
import { isStateless } from './stateless/stateless-wire.js';
import { PARSE_ERROR, readJsonBody } from './read-json-body.js';

const SESSION_HEADER = 'mcp-session-id';
/** `mcp/<agent>/<server>` (one MCP server) and `mcp/<agent>` (the aggregate endpoint). */
const ROUTES = [':server', '/'];

/**
 * `<base>/mcp/<agent>/<server>`: one Streamable HTTP endpoint per agent and MCP server, and
 * `<base>/mcp/<agent>`: the agent's aggregate endpoint (all its servers' tools, prefixed). Every
 * route needs a client token (ClientAuthGuard); an agent the client may not reach is answered
 * exactly like an agent that does not exist (404), so a token reveals no other agent names.
 */
@UseGuards(ClientAuthGuard)
@Controller('mcp/:agent')
export class McpController {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly relay: McpRelayService,
    private readonly stateless: StatelessRelay,
    @InjectMetric('relay_progress_dropped_total') private readonly dropped: Counter<'agent'>,
    @InjectMetric('relay_mcp_event_streams') private readonly streams: Gauge<'agent'>,
  ) {}

  @Post(ROUTES)
  async post(
    @Req() request: ClientRequest,
    @Res() response: Response,
    @Param('agent') agent: string,
    @Param('server') server: string | undefined,
  ): Promise<void> {
    const target = this.target(request, agent, server);
    const message = await readJsonBody(request, this.config.maxFrameBytes);
    if (message === PARSE_ERROR) {
      write(response, {
        status: 400,
        body: jsonRpcError(null, JsonRpcCode.ParseError, 'the body is not valid JSON'),
      });
      return;
    }
    if (message === INEXACT_ID) {
      write(response, {
        status: 400,
        body: jsonRpcError(
          null,
          JsonRpcCode.InvalidRequest,
          'a numeric id must be an integer or a number a double holds exactly: send it as a string',
        ),
      });
      return;
    }
    const hungUp = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) hungUp.abort();
    });
    const stream = acceptsEventStream(request)
      ? new LazyEventStream(response, this.config.maxFrameBytes, () => this.dropped.inc({ agent }))
      : undefined;
    // MCP 2026-07-28 (no session; an envelope in `_meta`) is translated; 2025 is forwarded.
    const protocolVersion = header(request, 'mcp-protocol-version');
    const answer = isStateless(message, protocolVersion)
      ? await this.stateless.post(
          target,
          message,
          { protocolVersion, method: header(request, 'mcp-method') },
          hungUp.signal,
          stream?.sink,
        )
      : await this.relay.post(target, message, hungUp.signal, stream?.sink);
    if (stream?.started) stream.finish(answer.body);
    else write(response, answer);
  }

  /**
   * The session's event stream: notifications the MCP server sends about no request
   * (`notifications/tools/list_changed`, logging). Held open until the client, the session or
   * the agent connection ends it; a client that does not read loses events past the frame limit.
   */
  @Get(ROUTES)
  stream(
    @Req() request: ClientRequest,
    @Res() response: Response,
    @Param('agent') agent: string,
    @Param('server') server: string | undefined,
  ): void {
    const target = this.target(request, agent, server);
    if (!acceptsEventStream(request)) {
      throw new HttpExceptionWithHeaders(
        HttpStatus.NOT_ACCEPTABLE,
        'the event stream needs Accept: text/event-stream',
        {},
      );
    }
    const events = new LazyEventStream(response, this.config.maxFrameBytes, () =>
      this.dropped.inc({ agent }),
    );
    const opened = this.relay.openStream(target, {
      send: events.sink,
      end: () => events.finish(undefined),
    });
    if (opened.answer) {
      write(response, opened.answer);
      return;
    }
    events.start();
    this.streams.inc({ agent });
    response.once('close', () => {
      this.streams.dec({ agent });
      opened.close?.();
    });
  }

  @Delete(ROUTES)
  end(
    @Req() request: ClientRequest,
    @Res() response: Response,
    @Param('agent') agent: string,
    @Param('server') server: string | undefined,
  ): void {
    write(response, this.relay.end(this.target(request, agent, server)));
  }

  private target(request: ClientRequest, agent: string, server: string | undefined): RelayTarget {
    const client = request.relayClient;
    if (!client?.agents.has(agent)) {
      throw new NotFoundException('no such MCP endpoint');
    }
    const sessionId = request.headers[SESSION_HEADER];
    return {
      client: client.name,
      agent,
      server,
      sessionId: typeof sessionId === 'string' && sessionId !== '' ? sessionId : undefined,
    };
  }
}

function header(request: ClientRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

function write(response: Response, answer: RelayAnswer): void {
  if (response.destroyed) return;
  response.status(answer.status);
  if (answer.sessionId) response.setHeader('Mcp-Session-Id', answer.sessionId);
  for (const [name, value] of Object.entries(answer.headers ?? {})) response.setHeader(name, value);
  if (answer.body === undefined) {
    response.end();
    return;
  }
  response.setHeader('Content-Type', 'application/json');
  response.end(stringifyMessage(answer.body));
}
