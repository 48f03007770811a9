import type { loadConfig } from './load-config.js';

/** The one typed, validated configuration of the process. Code reads this, never process.env. */
export type AppConfig = ReturnType<typeof loadConfig>;

export type WebhookConfig = AppConfig['webhooks'];

export const APP_CONFIG = Symbol('APP_CONFIG');
