import { createHash, createHmac } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import type { Database } from './database.types.js';

/** A receiver's id: an HMAC of its URL under the store's own key, 16 hex digits. */
export function receiverId(key: string, url: string): string {
  return createHmac('sha256', key).update(url).digest('hex').slice(0, 16);
}

/** The id earlier versions gave (a bare SHA-256 of the URL, invertible with a guess list). */
function unkeyedId(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

/** Keys each receiver's id before notices are touched, moving what earlier versions wrote. */
export async function keyReceiverIds(
  db: Kysely<Database>,
  receivers: WebhookReceiver[],
): Promise<void> {
  if (receivers.length === 0) return;
  const { value: key } = await db
    .selectFrom('webhook_settings')
    .select('value')
    .where('name', '=', 'receiver_id_key')
    .executeTakeFirstOrThrow();
  const ids = receivers.map((receiver) => {
    const url = receiver.url.reveal();
    return { receiver, id: receiverId(key, url), old: unkeyedId(url) };
  });
  await db.transaction().execute(async (trx) => {
    for (const { id, old } of ids) {
      await trx
        .updateTable('webhook_outbox')
        .set({ receiver: id })
        .where('receiver', '=', old)
        .execute();
      // A stop recorded under both ids (an older replica beside a newer one) is kept once.
      await trx
        .updateTable('webhook_receivers')
        .set({ receiver: id })
        .where('receiver', '=', old)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('webhook_receivers as keyed')
                .select('keyed.receiver')
                .where('keyed.receiver', '=', id),
            ),
          ),
        )
        .execute();
      await trx.deleteFrom('webhook_receivers').where('receiver', '=', old).execute();
    }
  });
  for (const { receiver, id } of ids) receiver.id = id;
}
