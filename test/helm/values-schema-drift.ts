/**
 * Where values.yaml and the hand-written values.schema.json disagree: a key of one that the other
 * lacks, or a default whose JSON type the schema does not allow. The schema is written by hand
 * because no generator that keeps its constraints installs here (helm/plant-store/README.md,
 * "Tests"); this check stands in for "generate it and diff".
 *
 * An object schema without `properties` is free-form (a Kubernetes object such as
 * securityContext, or a map such as podAnnotations): its keys are not chart keys. Keys the
 * schema knows that values.yaml cannot show are named in SCHEMA_ONLY_KEYS with the reason.
 */

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}

/** Schema keys that values.yaml leaves out on purpose. */
export const SCHEMA_ONLY_KEYS: Record<string, string> = {
  global: 'Helm fills it for subcharts; a chart does not set it in its own values.yaml',
  'networkPolicy.healthNamespaceSelector.matchExpressions':
    'the optional half of a LabelSelector; the default selects by matchLabels alone',
  'networkPolicy.metricsNamespaceSelector.matchExpressions':
    'the optional half of a LabelSelector; the default selects by matchLabels alone',
};

type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  return 'object';
}

function allows(schema: JsonSchema, type: JsonType): boolean {
  if (schema.anyOf) return schema.anyOf.some((branch) => allows(branch, type));
  if (schema.type === undefined) return true;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types.includes(type) || (type === 'integer' && types.includes('number'));
}

function describeTypes(schema: JsonSchema): string {
  if (schema.anyOf) return schema.anyOf.map(describeTypes).join(' or ');
  return Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? 'any');
}

/** Every disagreement between the values and the schema, one line each; empty when in step. */
export function valuesSchemaDrift(values: unknown, schema: JsonSchema): string[] {
  const problems: string[] = [];
  walk(values, schema, '', problems);
  return problems;
}

function walk(value: unknown, schema: JsonSchema, path: string, problems: string[]): void {
  const type = typeOf(value);
  if (!allows(schema, type)) {
    problems.push(`${path}: ${type} in values.yaml, ${describeTypes(schema)} in the schema`);
    return;
  }
  if (type === 'array' && schema.items) {
    (value as unknown[]).forEach((item, i) => walk(item, schema.items!, `${path}[${i}]`, problems));
  }
  if (type !== 'object') return;
  const object = value as Record<string, unknown>;
  const properties = schema.properties;
  for (const [key, child] of Object.entries(object)) {
    const at = path ? `${path}.${key}` : key;
    const known = properties?.[key];
    if (known) walk(child, known, at, problems);
    else if (typeof schema.additionalProperties === 'object')
      walk(child, schema.additionalProperties, at, problems);
    else if (properties || schema.additionalProperties === false)
      problems.push(`${at}: in values.yaml, not in the schema`);
  }
  for (const key of Object.keys(properties ?? {})) {
    const at = path ? `${path}.${key}` : key;
    if (!(key in object) && !(at in SCHEMA_ONLY_KEYS)) {
      problems.push(`${at}: in the schema, not in values.yaml`);
    }
  }
}
