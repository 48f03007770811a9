import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import type { ClassTransformOptions } from 'class-transformer';
import { getMetadataStorage, ValidationTypes } from 'class-validator';

/**
 * A validator compiled once per DTO class from the metadata its class-validator and
 * class-transformer decorators left (the same decorators the OpenAPI document is generated
 * from), for the global pipe's hot path (issue #16: per request, class-transformer's
 * plainToInstance and class-validator's ValidationExecutor cost ~30 us and ~14 KiB of garbage
 * on POST /plants).
 *
 * It runs the very constraint functions the decorators registered (`@IsString`'s `isString`,
 * `@MaxLength`'s `maxLength`, `@IsInt64`...) and the `@Transform` functions, in the order
 * class-validator and class-transformer run them, so it decides exactly as they do. It only
 * decides "valid": for a valid body it returns the instance plainToInstance would have made.
 * Anything else returns undefined and the pipe runs class-transformer + class-validator as
 * before, which refuse with their own messages (the @Transform functions then run a second
 * time: they are pure), and its message cannot drift. Undecided too (so also left to the
 * libraries): a property whose value is an object or array (class-transformer copies those),
 * an `each` rule on a collection, an asynchronous constraint's promise.
 *
 * `compileValidator` returns undefined for a class using what this does not compile (nested
 * validation, groups, @Type/@Expose/@Exclude, a transform with groups...): that class is
 * always validated by class-validator itself.
 */
export type CompiledValidator = (plain: Record<string, unknown>) => object | undefined;

type Constructor = new () => object;

interface ValidationArgs {
  targetName: string;
  property: string;
  object: object;
  value: unknown;
  constraints: unknown[];
}

interface Rule {
  property: string;
  constraints: unknown[];
  each: boolean;
  validateIf: ((object: object, value: unknown) => boolean) | undefined;
  validators: ((value: unknown, args: ValidationArgs) => unknown)[];
}

interface PropertyPlan {
  name: string;
  conditions: ((object: object, value: unknown) => boolean)[];
  /** @IsDefined first, then the others, in class-validator's order (decorators bottom-up). */
  rules: Rule[];
}

type TransformFn = (params: {
  value: unknown;
  key: string;
  obj: unknown;
  type: number;
  options: ClassTransformOptions;
}) => unknown;

/** class-transformer's TransformationType.PLAIN_TO_CLASS. */
const PLAIN_TO_CLASS = 0;

/** class-transformer's defaults (constants/default-options), which plainToInstance spreads first. */
const TRANSFORMER_DEFAULTS: ClassTransformOptions = {
  enableCircularCheck: false,
  enableImplicitConversion: false,
  excludeExtraneousValues: false,
  excludePrefixes: undefined,
  exposeDefaultValues: false,
  exposeUnsetFields: true,
  groups: undefined,
  ignoreDecorators: false,
  strategy: undefined,
  targetMaps: undefined,
  version: undefined,
};

const COMPILED_TYPES = new Set<string>([
  ValidationTypes.IS_DEFINED,
  ValidationTypes.CUSTOM_VALIDATION,
  ValidationTypes.CONDITIONAL_VALIDATION,
  ValidationTypes.WHITELIST,
]);

/**
 * `transformOptions` are the pipe's; only `enableImplicitConversion: false` (ours) compiles.
 * The validator options this mirrors are the pipe's too: whitelist + forbidNonWhitelisted
 * (unknown keys never reach it), forbidUnknownValues, no groups, no skip*Properties.
 */
export function compileValidator(
  metatype: Constructor,
  transformOptions: ClassTransformOptions,
): CompiledValidator | undefined {
  const options = { ...TRANSFORMER_DEFAULTS, ...transformOptions };
  if (Object.entries(options).some(([key, value]) => value !== TRANSFORMER_DEFAULTS[key as never]))
    return undefined;
  const storage = getMetadataStorage();
  // As ValidationExecutor asks: no schema, always = false, strictGroups = false, no groups.
  const metadatas = storage.getTargetValidationMetadatas(metatype, '', false, false, undefined);
  if (metadatas.length === 0) return undefined; // forbidUnknownValues refuses every value
  if (metadatas.some((m) => !COMPILED_TYPES.has(m.type))) return undefined;
  if (!transformerCompiles(metatype)) return undefined;

  const grouped = storage.groupByPropertyName(metadatas);
  const plans: PropertyPlan[] = [];
  const transforms = new Map<string, TransformFn[]>();
  for (const name of Object.keys(grouped)) {
    const group = grouped[name] ?? [];
    if (inheritedMember(metatype, name)) return undefined;
    if (defaultMetadataStorage.findTypeMetadata(metatype, name)) return undefined;
    const rules: Rule[] = [];
    const ordered = [
      ...group.filter((m) => m.type === ValidationTypes.IS_DEFINED),
      ...group.filter((m) => m.type === ValidationTypes.CUSTOM_VALIDATION),
    ];
    for (const m of ordered) {
      const constraints = storage.getTargetValidatorConstraints(m.constraintCls);
      if (constraints.some((c) => c.async)) return undefined;
      rules.push({
        property: name,
        constraints: m.constraints as unknown[],
        each: m.each === true,
        validateIf: m.validateIf,
        validators: constraints.map((c) => {
          const instance = c.instance as { validate(value: unknown, args: unknown): unknown };
          return (value, args) => instance.validate(value, args);
        }),
      });
    }
    plans.push({
      name,
      conditions: group
        .filter((m) => m.type === ValidationTypes.CONDITIONAL_VALIDATION)
        .map((m) => (m.constraints as Rule['validateIf'][])[0] as PropertyPlan['conditions'][0]),
      rules,
    });
    const fns = defaultMetadataStorage
      .findTransformMetadatas(metatype, name, PLAIN_TO_CLASS)
      // As class-transformer without `groups` in its options: transforms with groups are skipped.
      .filter((t) => !t.options?.groups?.length)
      .map((t) => t.transformFn as TransformFn);
    transforms.set(name, fns);
  }
  // With whitelist on, class-validator refuses an own property of the instance that has no
  // rule; a class field without a decorator would be one on every instance.
  if (Object.keys(new metatype()).some((key) => !transforms.has(key))) return undefined;
  const targetName = metatype.name;

  return (plain) => {
    const instance = new metatype() as Record<string, unknown>;
    // plainToInstance: each key of the plain object, its value through the @Transform functions.
    for (const key of Object.keys(plain)) {
      const fns = transforms.get(key);
      if (!fns) return undefined; // not a DTO property: the pipe refuses it anyway
      let value = plain[key];
      if (typeof value === 'object' && value !== null) return undefined; // copied by class-transformer
      for (const fn of fns) value = fn({ value, key, obj: plain, type: PLAIN_TO_CLASS, options });
      instance[key] = value;
    }
    // ValidationExecutor.performValidations, property by property; any failure: undecided.
    for (const plan of plans) {
      const value = instance[plan.name];
      let applies = true;
      for (const condition of plan.conditions) applies = condition(instance, value) && applies;
      if (!applies) continue;
      for (const rule of plan.rules) {
        if (rule.validateIf && !rule.validateIf(instance, value)) continue;
        if (rule.each && (Array.isArray(value) || value instanceof Set || value instanceof Map))
          return undefined;
        for (const validate of rule.validators) {
          const args = {
            targetName,
            property: rule.property,
            object: instance,
            value,
            constraints: rule.constraints,
          };
          const valid = validate(value, args);
          if (!valid || isPromise(valid)) return undefined;
        }
      }
    }
    return instance;
  };
}

/**
 * An accessor or method of that name anywhere on the class's prototype chain (below
 * Object.prototype): class-transformer skips such keys or assigns through the accessor.
 */
function inheritedMember(metatype: Constructor, name: string): boolean {
  for (let proto = metatype.prototype as object | null; proto && proto !== Object.prototype;) {
    if (Object.getOwnPropertyDescriptor(proto, name)) return true;
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return false;
}

/** No class-transformer feature beyond @Transform: no strategy, @Expose or @Exclude. */
function transformerCompiles(metatype: Constructor): boolean {
  return (
    defaultMetadataStorage.getStrategy(metatype) === 'none' &&
    defaultMetadataStorage.getExposedMetadatas(metatype).length === 0 &&
    defaultMetadataStorage.getExcludedMetadatas(metatype).length === 0
  );
}

function isPromise(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
