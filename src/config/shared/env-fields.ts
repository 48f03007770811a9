import { z } from 'zod';

/**
 * The building blocks of the environment schemas: `setting()` declares each one's
 * description, default and secret flag, from which `npm run docs:settings` writes the docs.
 * Messages name the variable and never echo a value.
 */

/** The table a service setting is listed in; the relay server's schema is a table of its own. */
export type SettingGroup = 'service' | 'agent' | 'webhook';

export type SettingMeta = {
  /** One line for the tables and `.env.example`. */
  description: string;
  group?: SettingGroup;
  /** Never shown with a value, in the docs or anywhere else. */
  secret?: true;
  /** What an unset variable means, when the schema has no default (`/app/config`, `off`). */
  unset?: string;
};

/** A setting's schema with what the docs say about it (zod's metadata registry). */
export const setting = <T extends z.ZodType>(schema: T, meta: SettingMeta): T => schema.meta(meta);

/** Empty strings count as unset, as they do for most twelve-factor services. */
export const unsetIfEmpty = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

/** `true` or `false`, kept as the string (the typed config turns it into a boolean). */
export const trueOrFalse = (name: string) =>
  z.enum(['true', 'false'], { error: `${name} must be true or false` });

/** NO_COLOR, read by every process (no-color.org): present and not empty, it is true. */
export const noColorField = {
  NO_COLOR: setting(
    unsetIfEmpty(z.string()).transform((value) => value !== undefined),
    { description: 'Non-empty: JSON log lines even on a terminal (no-color.org)' },
  ),
};

/** `[min, max, default, description, wording?]`; the wording follows the name in the message. */
export type WholeNumberRow = readonly [
  min: number,
  max: number,
  fallback: number,
  description: string,
  wording?: string,
];

/** A whole number from `min` to `max`, its message naming the variable. */
const wholeNumberSetting = (
  name: string,
  [min, max, fallback, description, wording]: WholeNumberRow,
  group?: SettingGroup,
) => {
  const message = `${name} ${wording ?? `must be a whole number from ${min} to ${max}`}`;
  const wholeNumber = z
    .string()
    .trim()
    .regex(/^\d{1,15}$/, message)
    .transform(Number)
    .pipe(z.number().min(min, message).max(max, message));
  return setting(unsetIfEmpty(wholeNumber).default(fallback), {
    description,
    ...(group && { group }),
  });
};

export function wholeNumberSettings<K extends string>(
  rows: Record<K, WholeNumberRow>,
  group?: SettingGroup,
) {
  return Object.fromEntries(
    Object.entries<WholeNumberRow>(rows).map(([name, row]) => [
      name,
      wholeNumberSetting(name, row, group),
    ]),
  ) as Record<K, ReturnType<typeof wholeNumberSetting>>;
}
