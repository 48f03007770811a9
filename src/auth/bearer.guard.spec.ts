import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Public } from '../common/auth/public.decorator.js';
import { BearerGuard } from './bearer.guard.js';
import type { BearerStrategy } from './bearer.strategy.js';

// One handler function shared by two controllers, as an inherited method is.
function inherited(): string {
  return 'index';
}
@Public()
class OpenController {}
class ClosedController {}

function contextOf(controller: object): ExecutionContext {
  return {
    getHandler: () => inherited,
    getClass: () => controller,
    switchToHttp: () => ({ getRequest: () => ({ headers: {} }) }),
  } as unknown as ExecutionContext;
}

describe('BearerGuard', () => {
  it('decides @Public() per controller, even for a handler two controllers inherit', () => {
    const strategy = { check: () => ({ kind: 'fail' }) } as unknown as BearerStrategy;
    const failures = new Counter({ name: 'f', help: 'f', registers: [new Registry()] });
    const guard = new BearerGuard(new Reflector(), strategy, failures);
    // The open controller first, so a cache keyed by the handler alone would open the other.
    expect(guard.canActivate(contextOf(OpenController))).toBe(true);
    expect(() => guard.canActivate(contextOf(ClosedController))).toThrow(/authentication required/);
  });
});
