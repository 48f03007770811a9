import { BadRequestException } from '@nestjs/common';

/** Refuses a path whose percent-encoding does not decode, with a plain message; mounted first. */
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
