import { ValidateBy } from 'class-validator';
import { INT64_RANGE_MESSAGE, toInt64 } from '../json/int64.js';

/** A safe-integer number or an in-range bigint, as the parser gives them; nothing is coerced. */
export const IsInt64 = (): PropertyDecorator =>
  ValidateBy(
    { name: 'isInt64', validator: { validate: (value: unknown) => toInt64(value) !== undefined } },
    { message: `$property must be ${INT64_RANGE_MESSAGE}` },
  );

// Well-formed Unicode (a lone surrogate would be stored as U+FFFD). NUL is refused by
// `@Matches`, a literal the swagger plugin documents as a pattern (PostgreSQL cannot hold it).
export const IsWellFormedText = (): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isWellFormedText',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && value.isWellFormed(),
      },
    },
    { message: '$property must be well-formed Unicode text' },
  );
