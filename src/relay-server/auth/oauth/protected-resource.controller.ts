import { Controller, Get, Inject, NotFoundException, Req } from '@nestjs/common';
import type { Request } from 'express';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';
import { RELAY_NAME } from '../../config/relay-env.schema.js';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

// Protected Resource Metadata (RFC 9728). One resource covers every endpoint: a client probing
// per endpoint (`<well-known>/<path>/mcp/<agent>`) gets the same document, with the agent's scope.
@Controller(WELL_KNOWN.slice(1))
export class ProtectedResourceController {
  constructor(@Inject(RELAY_CONFIG) private readonly config: RelayConfig) {}

  @Get(['', '*path'])
  metadata(@Req() request: Request): Record<string, unknown> {
    const oauth = this.config.oauth;
    if (!oauth) throw new NotFoundException('this relay accepts no OAuth access tokens');
    const agent = agentOf(request.path.slice(WELL_KNOWN.length));
    return {
      resource: oauth.resource,
      authorization_servers: [oauth.issuer],
      bearer_methods_supported: ['header'],
      ...(agent !== undefined && { scopes_supported: [`${oauth.scopePrefix}${agent}`] }),
      resource_name: 'Plant Store relay',
    };
  }
}

function agentOf(suffix: string): string | undefined {
  const match = /\/mcp\/([^/]+)(?:\/[^/]+)?\/?$/.exec(suffix);
  const agent = match?.[1];
  return agent !== undefined && RELAY_NAME.test(agent) ? agent : undefined;
}
