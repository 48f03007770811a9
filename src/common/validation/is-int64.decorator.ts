import { registerDecorator, type ValidationOptions } from 'class-validator';
import { INT64_RANGE_MESSAGE, toInt64 } from '../json/int64.js';

/** A safe-integer number or an in-range bigint, as the parser gives them; nothing is coerced. */
export function IsInt64(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) => {
    registerDecorator({
      name: 'isInt64',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: `$property must be ${INT64_RANGE_MESSAGE}`, ...options },
      validator: { validate: (value: unknown) => toInt64(value) !== undefined },
    });
  };
}
