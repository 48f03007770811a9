import {
  type ArgumentMetadata,
  BadRequestException,
  Injectable,
  ValidationPipe,
  type ValidationError,
} from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { type CompiledCheck, compileCheck } from './compiled-check.js';

const TRANSFORM_OPTIONS = { enableImplicitConversion: false };

type DtoClass = { known: Set<string>; check: CompiledCheck | undefined };

// A body must be a JSON object; unknown properties (`__proto__` included, which class-transformer
// drops) are refused by name; nothing is coerced; every problem is listed in one message.
@Injectable()
export class ApiValidationPipe extends ValidationPipe {
  /** Per DTO class, on first use: its properties and its check (none: the libraries decide). */
  private readonly classes = new WeakMap<object, DtoClass>();

  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      transform: true,
      transformOptions: TRANSFORM_OPTIONS,
      stopAtFirstError: true,
      validationError: { target: false, value: false },
      exceptionFactory: (errors: ValidationError[]) => new FieldProblems(flatten(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype;
    const checked = metadata.type === 'body' || metadata.type === 'query';
    if (checked && metatype && this.toValidate(metadata)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new BadRequestException('the request body must be a JSON object');
      }
      // The query too: `?__proto__=1` was dropped silently where `?colour=1` is refused.
      const { known, check } = this.classOf(metatype);
      const unknown = Object.keys(value).filter((key) => !known.has(key));
      if (unknown.length === 0) {
        // The hot path: a valid object is accepted by the compiled check; anything it does not
        // accept goes through Nest's ValidationPipe below, which decides again and says why.
        const valid = check?.(value);
        if (valid !== undefined) return valid;
      }
      // The known fields are validated without the unknown ones (class-validator would name
      // each of those itself, uncapped), and both kinds of problem are reported together.
      const knownOnly =
        unknown.length === 0
          ? value
          : Object.fromEntries(Object.entries(value).filter(([key]) => known.has(key)));
      let fields: string[] = [];
      try {
        const valid: unknown = await super.transform(knownOnly, metadata);
        if (unknown.length === 0) return valid;
      } catch (error) {
        if (!(error instanceof FieldProblems)) throw error;
        fields = error.problems;
      }
      const kind = metadata.type === 'query' ? 'query parameter' : 'property';
      throw new BadRequestException(problemsMessage(fields, unknown, kind));
    }
    return super.transform(value, metadata);
  }

  /** bigint path ids are parsed by ParseInt64Pipe; there is no class to validate. */
  protected override toValidate(metadata: ArgumentMetadata): boolean {
    return (metadata.metatype as unknown) !== BigInt && super.toValidate(metadata);
  }

  private classOf(metatype: object): DtoClass {
    let entry = this.classes.get(metatype);
    if (!entry) {
      const type = metatype as new () => object;
      const metadatas = getMetadataStorage().getTargetValidationMetadatas(type, '', true, false);
      entry = { known: new Set(metadatas.map((m) => m.propertyName)), check: compileCheck(type) };
      this.classes.set(metatype, entry);
    }
    return entry;
  }
}

/** The field problems thrown by the pipe's exceptionFactory, before unknown properties join them. */
class FieldProblems extends BadRequestException {
  constructor(readonly problems: string[]) {
    super(problemsMessage(problems, []));
  }
}

/** Field problems, then unknown properties; several are counted in front. */
export function problemsMessage(
  fields: string[],
  unknown: string[],
  kind: UnknownKind = 'property',
): string {
  const parts = [...fields];
  if (unknown.length > 0) parts.push(unknownPropertiesMessage(unknown, kind));
  const count = fields.length + unknown.length;
  return count === 1 ? parts.join('; ') : `${count} problems: ${parts.join('; ')}`;
}

/** What an unknown name is called in messages: a body's property or a query parameter. */
export type UnknownKind = 'property' | 'query parameter';

/** Unknown properties named in an error message; past it, only their count. */
export const NAMED_UNKNOWN_PROPERTIES = 5;
const MAX_NAME_IN_MESSAGE = 64;

/** The first unknown names (each cut at 64) and a count: 6,500 of them made a 200 KB message. */
export function unknownPropertiesMessage(
  unknown: string[],
  kind: UnknownKind = 'property',
): string {
  const named = unknown.slice(0, NAMED_UNKNOWN_PROPERTIES).map((key) => {
    const name = key.length > MAX_NAME_IN_MESSAGE ? `${key.slice(0, MAX_NAME_IN_MESSAGE)}...` : key;
    return `${kind} ${name} is not allowed`;
  });
  const more = unknown.length - named.length;
  const plural = kind === 'property' ? 'properties' : 'query parameters';
  if (more > 0) named.push(`and ${more} more unknown ${plural} (${unknown.length} in all)`);
  return named.join('; ');
}

function flatten(errors: ValidationError[], prefix = ''): string[] {
  return errors.flatMap((error) => [
    ...Object.values(error.constraints ?? {}).map((message) => `${prefix}${message}`),
    ...flatten(error.children ?? [], `${prefix}${error.property}.`),
  ]);
}
