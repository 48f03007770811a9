import { BadRequestException } from '@nestjs/common';

/**
 * Refuses a path whose percent-encoding does not decode (`/plants/%`, `/plants/%ff`) with a
 * plain message. Without it the router's "Failed to decode param '%'" reached the client.
 * Mounted first, as an Express handler, so it sees every path on every listener.
 */
export function malformedPathHandler(
  request: { path: string },
  _response: unknown,
  next: (error?: unknown) => void,
): void {
  try {
    decodeURIComponent(request.path);
  } catch {
    next(new BadRequestException('the request path is not valid percent-encoded UTF-8'));
    return;
  }
  next();
}
