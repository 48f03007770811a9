import { z } from 'zod';
import { unsetIfEmpty } from '../../config/shared/env-fields.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** https, or http on a loopback host (a local IdP): no OAuth document travels in clear. */
export function isHttpsOrLoopback(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url));
}

export const isLoopback = (url: URL) => LOOPBACK.has(url.hostname);

/** A URL setting that passes `test`; the message never echoes the value (it may hold a password). */
export const urlSetting = (test: (url: URL) => boolean, message: string) =>
  unsetIfEmpty(
    z
      .string()
      .trim()
      .refine((text) => URL.canParse(text) && test(new URL(text)), message),
  );
