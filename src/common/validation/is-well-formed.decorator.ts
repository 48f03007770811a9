import { registerDecorator, type ValidationOptions } from 'class-validator';

/**
 * Well-formed Unicode (a lone surrogate would be stored as U+FFFD). NUL is refused by
 * `@Matches`, a literal the swagger plugin documents as a pattern (PostgreSQL cannot hold it).
 */
export function IsWellFormedText(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) => {
    registerDecorator({
      name: 'isWellFormedText',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: '$property must be well-formed Unicode text', ...options },
      validator: {
        validate: (value: unknown) => typeof value === 'string' && value.isWellFormed(),
      },
    });
  };
}
