/**
 * values.schema.json is written by hand beside values.yaml; this keeps the two in step: every
 * key of one is in the other, with a type that allows its default. Needs no helm, so it runs
 * everywhere. (helm lint, in chart-schemas.spec.ts, checks the defaults against the schema's
 * other constraints: enums, patterns, minimums, required.)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type JsonSchema, valuesSchemaDrift } from './values-schema-drift.js';
import { chartDir } from './helm-tools.js';

const read = (name: string) => readFileSync(path.join(chartDir, name), 'utf8');

describe('values.yaml and values.schema.json', () => {
  it('are in step: every key in both, each default of a type the schema allows', () => {
    const values: unknown = parse(read('values.yaml'));
    const schema = JSON.parse(read('values.schema.json')) as JsonSchema;
    expect(valuesSchemaDrift(values, schema)).toEqual([]);
  });
});

describe('the drift check', () => {
  const schema: JsonSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
      port: { type: 'integer' },
      ratio: { type: 'number' },
      cpu: { anyOf: [{ type: 'string' }, { type: 'number' }] },
      image: { type: 'object', properties: { tag: { type: 'string' } } },
      hosts: {
        type: 'array',
        items: { type: 'object', properties: { host: { type: 'string' } } },
      },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      securityContext: { type: 'object' },
    },
  };
  const inStep = {
    port: 3000,
    ratio: 1,
    cpu: '250m',
    image: { tag: '' },
    hosts: [{ host: 'a.local' }],
    labels: { team: 'plants' },
    securityContext: { runAsUser: 1000, capabilities: { drop: ['ALL'] } },
  };

  it('finds nothing when the two agree (free-form objects and maps included)', () => {
    expect(valuesSchemaDrift(inStep, schema)).toEqual([]);
    expect(valuesSchemaDrift({ ...inStep, cpu: 0.5 }, schema)).toEqual([]);
  });

  it('names a key of values.yaml the schema lacks, at any depth', () => {
    expect(valuesSchemaDrift({ ...inStep, replicas: 2 }, schema)).toEqual([
      'replicas: in values.yaml, not in the schema',
    ]);
    expect(valuesSchemaDrift({ ...inStep, image: { tag: '', digest: '' } }, schema)).toEqual([
      'image.digest: in values.yaml, not in the schema',
    ]);
  });

  it('names a key of the schema that values.yaml lacks', () => {
    const withoutRatio: Record<string, unknown> = { ...inStep };
    delete withoutRatio.ratio;
    expect(valuesSchemaDrift(withoutRatio, schema)).toEqual([
      'ratio: in the schema, not in values.yaml',
    ]);
    expect(valuesSchemaDrift({ ...inStep, hosts: [{}] }, schema)).toEqual([
      'hosts[0].host: in the schema, not in values.yaml',
    ]);
  });

  it('names a default whose type the schema does not allow', () => {
    expect(valuesSchemaDrift({ ...inStep, port: '3000' }, schema)).toEqual([
      'port: string in values.yaml, integer in the schema',
    ]);
    expect(valuesSchemaDrift({ ...inStep, cpu: true }, schema)).toEqual([
      'cpu: boolean in values.yaml, string or number in the schema',
    ]);
    expect(valuesSchemaDrift({ ...inStep, labels: { team: 1 } }, schema)).toEqual([
      'labels.team: integer in values.yaml, string in the schema',
    ]);
    expect(valuesSchemaDrift({ ...inStep, port: 1.5 }, schema)).toEqual([
      'port: number in values.yaml, integer in the schema',
    ]);
  });
});
