import {
  type CanActivate,
  type ExecutionContext,
  ForbiddenException,
  Inject,
  Injectable,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Request } from 'express';
import type { Counter } from 'prom-client';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { isLoopback } from '../config/secure-url.js';

// Against DNS rebinding: a request with an `Origin` (a web page's) must come from the relay's
// own origin, loopback or RELAY_ALLOWED_ORIGINS, checked before the token. Non-browsers send none.
@Injectable()
export class OriginGuard implements CanActivate {
  private readonly allowed: ReadonlySet<string> | '*';

  constructor(
    @Inject(RELAY_CONFIG) config: RelayConfig,
    @InjectMetric('relay_origin_refusals_total') private readonly refusals: Counter,
  ) {
    const listed = config.allowedOrigins;
    const own = config.oauth ? [new URL(config.oauth.resource).origin] : [];
    this.allowed = listed === '*' ? '*' : new Set([...listed, ...own]);
  }

  canActivate(context: ExecutionContext): boolean {
    const origin = context.switchToHttp().getRequest<Request>().headers.origin;
    if (origin === undefined || this.allows(origin)) return true;
    this.refusals.inc();
    throw new ForbiddenException(
      'requests from this web origin are not allowed here (RELAY_ALLOWED_ORIGINS)',
    );
  }

  private allows(origin: string): boolean {
    if (this.allowed === '*' || this.allowed.has(origin)) return true;
    return URL.canParse(origin) && isLoopback(new URL(origin));
  }
}
