import { Controller, Get, HttpCode, HttpStatus, Req, UnauthorizedException } from '@nestjs/common';
import type { ClientRequest } from '../auth/client-request.js';

export const PEER_PING_PATH = 'relay-peer/ping';

// 204 while this process runs: pinged by a replica whose request here got no answer in time.
// SignedPeerAuthenticator checked the signature.
@Controller(PEER_PING_PATH)
export class PeerPingController {
  @Get()
  @HttpCode(HttpStatus.NO_CONTENT)
  ping(@Req() request: ClientRequest): void {
    if (!request.fromPeer) throw new UnauthorizedException('only the relay replicas may ping');
  }
}
