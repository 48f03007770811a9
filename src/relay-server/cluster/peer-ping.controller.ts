import {
  Controller,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  UnauthorizedException,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { PEER_SECRET } from './peer-headers.js';
import { RelayCluster } from './relay-cluster.service.js';

/** `<base>/relay-peer/ping` on the relay port, for the replicas only. */
export const PEER_PING_PATH = 'relay-peer/ping';

/**
 * What a replica pings when a request it passed to this one got no answer in time: 204 shows
 * this process still runs. Only for the replicas (their shared secret); 401 for anyone else.
 */
@Controller(PEER_PING_PATH)
export class PeerPingController {
  constructor(
    private readonly cluster: RelayCluster,
    @InjectMetric('relay_peer_auth_failures_total') private readonly peerFailures: Counter,
  ) {}

  @Get()
  @HttpCode(HttpStatus.NO_CONTENT)
  ping(@Headers(PEER_SECRET) secret: string | undefined): void {
    if (secret !== undefined && this.cluster.isPeerSecret(secret)) return;
    if (secret !== undefined) this.peerFailures.inc();
    throw new UnauthorizedException('only the relay replicas may ping');
  }
}
