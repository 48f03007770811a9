import type { Migration, MigrationProvider } from 'kysely';
import { createPlants } from './2026-11-23-001-create-plants.js';
import { createWebhookOutbox } from './2026-11-23-002-create-webhook-outbox.js';
import { createWebhookReceivers } from './2026-11-23-003-create-webhook-receivers.js';
import { indexDueNotices } from './2026-11-25-001-index-due-notices.js';
import { addOutboxTraceContext } from './2026-11-25-002-add-outbox-trace-context.js';
import { notifyOutboxInserts } from './2026-11-27-001-notify-outbox-inserts.js';
import { addWebhookSettings } from './2026-11-28-001-add-webhook-settings.js';
import { indexPendingByAge } from './2026-11-28-002-index-pending-by-age.js';
import { indexFinishedNotices } from './2026-11-28-003-index-finished-notices.js';

/**
 * Listed, not found on disk: the image carries exactly these, in this order. Forward only,
 * as nothing migrates down: a change is undone by a new migration.
 */
const migrations: Record<string, Migration> = {
  '2026-11-23-001-create-plants': createPlants,
  '2026-11-23-002-create-webhook-outbox': createWebhookOutbox,
  '2026-11-23-003-create-webhook-receivers': createWebhookReceivers,
  '2026-11-25-001-index-due-notices': indexDueNotices,
  '2026-11-25-002-add-outbox-trace-context': addOutboxTraceContext,
  '2026-11-27-001-notify-outbox-inserts': notifyOutboxInserts,
  '2026-11-28-001-add-webhook-settings': addWebhookSettings,
  '2026-11-28-002-index-pending-by-age': indexPendingByAge,
  '2026-11-28-003-index-finished-notices': indexFinishedNotices,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
