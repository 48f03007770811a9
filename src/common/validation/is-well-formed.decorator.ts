import { registerDecorator, type ValidationOptions } from 'class-validator';

/**
 * Text that every store keeps as sent: well-formed Unicode (a lone surrogate would be stored
 * as U+FFFD, silently changing the value). NUL characters are refused separately with
 * `@Matches(/^[^\u0000]*$/)` (a literal, so the swagger plugin can read it), which also documents the rule as a `pattern` in the OpenAPI schema
 * (PostgreSQL's text cannot hold NUL: schemathesis found the 500 this used to cause).
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
