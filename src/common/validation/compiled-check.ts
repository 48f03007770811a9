import { getMetadataStorage, ValidationTypes } from 'class-validator';
import { conversionsOf } from './convert-plain.decorator.js';

// The pipe's fast path (~1 us where Nest's ValidationPipe costs ~20 us): it only ever answers
// "valid"; anything else, or a DTO using rules it does not run, goes to the libraries.
export type CompiledCheck = (plain: object) => object | undefined;

interface Rule {
  constraints: unknown[];
  each: boolean;
  validateIf: ((object: object, value: unknown) => boolean) | undefined;
  validators: ((value: unknown, args: object) => unknown)[];
}

interface PropertyPlan {
  name: string;
  conditions: ((object: object, value: unknown) => boolean)[];
  rules: Rule[];
}

const COMPILED_TYPES = new Set<string>([
  ValidationTypes.IS_DEFINED,
  ValidationTypes.CUSTOM_VALIDATION,
  ValidationTypes.CONDITIONAL_VALIDATION,
  ValidationTypes.WHITELIST,
]);

/** The check for `metatype`, or undefined when only class-validator itself may decide. */
export function compileCheck(metatype: new () => object): CompiledCheck | undefined {
  const storage = getMetadataStorage();
  // As ValidationExecutor asks: no schema, always = false, strictGroups = false, no groups.
  const metadatas = storage.getTargetValidationMetadatas(metatype, '', false, false, undefined);
  if (metadatas.length === 0) return undefined; // forbidUnknownValues refuses every value
  // Object.assign stands for plainToInstance on a plain class only: no parent, no accessors.
  if (Object.getPrototypeOf(metatype) !== Function.prototype) return undefined;
  if (Object.getOwnPropertyNames(metatype.prototype).length > 1) return undefined;
  if (metadatas.some((m) => !COMPILED_TYPES.has(m.type) || m.propertyName === undefined))
    return undefined;
  const grouped = storage.groupByPropertyName(metadatas);
  const plans: PropertyPlan[] = [];
  for (const [name, group] of Object.entries(grouped)) {
    const rules = rulesOf(group);
    if (!rules) return undefined;
    const conditions = group
      .filter((m) => m.type === ValidationTypes.CONDITIONAL_VALIDATION)
      .map((m) => (m.constraints as PropertyPlan['conditions'])[0]);
    if (conditions.some((condition) => typeof condition !== 'function')) return undefined;
    plans.push({ name, conditions: conditions as PropertyPlan['conditions'], rules });
  }
  const known = new Set(Object.keys(grouped));
  const conversions = [...conversionsOf(metatype)];
  return (plain) => {
    const instance = Object.assign(new metatype(), plain) as Record<string, unknown>;
    for (const [key, convert] of conversions)
      if (Object.hasOwn(plain, key)) instance[key] = convert(instance[key]);
    return passes(instance, plans, known, metatype.name) ? instance : undefined;
  };
}

/** A property's rules, @IsDefined first; undefined if one of its constraints is asynchronous. */
function rulesOf(
  group: ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>,
): Rule[] | undefined {
  const storage = getMetadataStorage();
  const ordered = [
    ...group.filter((m) => m.type === ValidationTypes.IS_DEFINED),
    ...group.filter((m) => m.type === ValidationTypes.CUSTOM_VALIDATION),
  ];
  const rules: Rule[] = [];
  for (const m of ordered) {
    const constraints = storage.getTargetValidatorConstraints(m.constraintCls);
    if (constraints.some((c) => c.async)) return undefined;
    rules.push({
      constraints: m.constraints as unknown[],
      each: m.each === true,
      validateIf: m.validateIf,
      validators: constraints.map((c) => {
        const instance = c.instance as { validate(value: unknown, args: object): unknown };
        return (value, args) => instance.validate(value, args);
      }),
    });
  }
  return rules;
}

/** ValidationExecutor's decision for a valid instance, property by property; else false. */
function passes(
  instance: object,
  plans: PropertyPlan[],
  known: Set<string>,
  targetName: string,
): boolean {
  const values = instance as Record<string, unknown>;
  // whitelist + forbidNonWhitelisted: an own property without rules is refused.
  for (const key of Object.keys(values)) {
    if (!known.has(key)) return false;
    const value = values[key];
    if (typeof value === 'object' && value !== null) return false;
  }
  try {
    for (const plan of plans) {
      if (!planPasses(instance, values[plan.name], plan, targetName)) return false;
    }
  } catch {
    return false;
  }
  return true;
}

function planPasses(
  object: object,
  value: unknown,
  plan: PropertyPlan,
  targetName: string,
): boolean {
  // Conditions all run (as class-validator runs them), and any false one skips the property.
  let applies = true;
  for (const condition of plan.conditions) applies = condition(object, value) && applies;
  if (!applies) return true;
  for (const rule of plan.rules) {
    if (rule.validateIf && !rule.validateIf(object, value)) continue;
    if (rule.each && (Array.isArray(value) || value instanceof Set || value instanceof Map))
      return false;
    const args = { targetName, property: plan.name, object, value, constraints: rule.constraints };
    for (const validate of rule.validators) {
      const valid = validate(value, args);
      if (valid !== true) return false;
    }
  }
  return true;
}
