import { Controller, Get, HttpCode, HttpStatus, Req, UnauthorizedException } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Request } from 'express';
import type { Counter } from 'prom-client';
import { PEER_SIGNATURE } from './peer-headers.js';
import { RelayCluster } from './relay-cluster.service.js';

export const PEER_PING_PATH = 'relay-peer/ping';

/** 204 while this process runs: pinged by a replica whose request here got no answer in time. */
@Controller(PEER_PING_PATH)
export class PeerPingController {
  constructor(
    private readonly cluster: RelayCluster,
    @InjectMetric('relay_peer_auth_failures_total') private readonly peerFailures: Counter,
  ) {}

  @Get()
  @HttpCode(HttpStatus.NO_CONTENT)
  ping(@Req() request: Request): void {
    const signature = request.headers[PEER_SIGNATURE];
    const signed = {
      method: 'GET',
      path: request.originalUrl,
      client: '',
      agents: '',
      session: '',
    };
    if (typeof signature === 'string' && this.cluster.isPeerSigned(signature, signed)) return;
    if (signature !== undefined) this.peerFailures.inc();
    throw new UnauthorizedException('only the relay replicas may ping');
  }
}
