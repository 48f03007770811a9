import { Transform } from 'class-transformer';

export type Conversion = (value: unknown) => unknown;

const conversions = new WeakMap<object, Map<string, Conversion>>();

// class-transformer's @Transform (plain to class), also kept where the pipe's compiled check
// reads it: DTOs convert through this only, so a valid body needs no plainToInstance (~4 us).
export function ConvertPlain(convert: Conversion): PropertyDecorator {
  const transform = Transform(({ value }: { value: unknown }) => convert(value), {
    toClassOnly: true,
  });
  return (target, property) => {
    transform(target, property);
    const ofClass = conversions.get(target.constructor) ?? new Map<string, Conversion>();
    conversions.set(target.constructor, ofClass.set(String(property), convert));
  };
}

/** A DTO class's own conversions by property name. */
export function conversionsOf(metatype: object): ReadonlyMap<string, Conversion> {
  return conversions.get(metatype) ?? new Map<string, Conversion>();
}
