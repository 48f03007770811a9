import 'reflect-metadata';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArgumentMetadata } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { IsString, ValidateNested, validateSync, type ValidationError } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { ListPlantsQueryDto } from './list-plants.query.dto.js';
import { NewPlantDto } from './new-plant.dto.js';
import { parseJson } from '../../common/json/lossless-json.js';
import { compileCheck } from '../../common/validation/compiled-check.js';
import { ApiValidationPipe, problemsMessage } from '../../common/validation/validation.pipe.js';

const TRANSFORM_OPTIONS = { enableImplicitConversion: false };
/** The global pipe's validator options (validation.pipe.ts). */
const VALIDATOR_OPTIONS = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  stopAtFirstError: true,
  validationError: { target: false, value: false },
};

type Plain = Record<string, unknown>;

/** What class-transformer + class-validator decide, as the pipe called them before. */
function reference(metatype: new () => object, plain: Plain) {
  const instance = plainToInstance(metatype, plain, TRANSFORM_OPTIONS);
  const errors = validateSync(instance, VALIDATOR_OPTIONS);
  return { instance, messages: flatten(errors) };
}

function flatten(errors: ValidationError[]): string[] {
  return errors.flatMap((e) => [
    ...Object.values(e.constraints ?? {}),
    ...flatten(e.children ?? []),
  ]);
}

const ABSENT = Symbol('absent');
function body(fields: Record<string, unknown>): Plain {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ABSENT));
}

/** Every case of the validation tables (new-plant.dto.spec.ts, test/plants.e2e-spec.ts) that parses. */
const TABLE = [
  '{"id": 1, "name": "Fern"}',
  '{"id": 9007199254740993, "name": "n", "tag": "t"}',
  '{"id": -9223372036854775808, "name": "n"}',
  '{"id": "5", "name": "x"}',
  '{"id": 1.5, "name": "x"}',
  '{"id": 9223372036854775808, "name": "x"}',
  '{"id": -9223372036854775809, "name": "x"}',
  '{"id": 9007199254740993.5, "name": "x"}',
  '{"id": 1.00000000000000000001, "name": "x"}',
  '{"id": null, "name": "x"}',
  '{"id": true, "name": "x"}',
  '{"id": 1e400, "name": "x"}',
  '{"name": "x"}',
  '{"id": 1}',
  '{"id": 40, "name": 5}',
  '{"id": 1, "name": ""}',
  `{"id": 1, "name": "${'n'.repeat(256)}"}`,
  `{"id": 1, "name": "${'n'.repeat(257)}"}`,
  '{"id": 1, "name": "a\\u0000"}',
  '{"id": 1, "name": "\\ud800"}',
  '{"id": 1, "name": "x", "tag": null}',
  '{"id": 40, "name": "x", "tag": 3}',
  `{"id": 1, "name": "x", "tag": "${'t'.repeat(64)}"}`,
  `{"id": 1, "name": "x", "tag": "${'t'.repeat(65)}"}`,
  '{"id": 40, "name": "x", "tag": "\\u0000"}',
  '{"id": "1", "name": 2, "tag": 3}',
  '{"id": 1.5, "name": ""}',
  `{"id": 40, "name": "x", "tag": ${'{"a":'.repeat(10)}1${'}'.repeat(10)}}`,
];

/** Every value of each property against every value of the others (the custom decorators' too). */
const IDS = [1, 0, -1, 1.5, -0, '5', null, true, 2 ** 53 - 1, 9007199254740993n, 2n ** 63n - 1n];
const MORE_IDS = [2n ** 63n, -(2n ** 63n), -(2n ** 63n) - 1n, Infinity, NaN, {}, [], [1], ABSENT];
const NAMES = ['x', '', 'n'.repeat(256), 'n'.repeat(257), 'a\u0000b', 'a\ud800', '\udc00', 5];
const MORE_NAMES = [null, true, {}, ['x'], ABSENT, '😀'.repeat(128), '😀'.repeat(129)];
const TAGS = ['t', '', 't'.repeat(64), 't'.repeat(65), '\u0000', 'x\ud800y', null, 3, {}, ABSENT];

const grid: Plain[] = [];
for (const id of [...IDS, ...MORE_IDS])
  for (const name of [...NAMES, ...MORE_NAMES])
    for (const tag of TAGS) grid.push(body({ id, name, tag }));

const LIMITS = ['20', '0', '-1', '2147483647', '2147483648', '-2147483649', 'abc', '1.5', ''];
const MORE_LIMITS = ['1e3', '+5', ' 5', '05', ['1', '2'], ABSENT];
const CURSORS = ['AAAAAAAAAAo', 'not-a-cursor!', '', ['a', 'b'], ABSENT];
/** Query objects as Express 5's parser makes them: null prototype, string or array values. */
const queries = [...LIMITS, ...MORE_LIMITS].flatMap((limit) =>
  CURSORS.map((cursor) => Object.assign(Object.create(null) as Plain, body({ limit, cursor }))),
);

const newPlant = compileCheck(NewPlantDto);
const listQuery = compileCheck(ListPlantsQueryDto);

describe('compileCheck', () => {
  it('compiles the API DTOs', () => {
    expect(newPlant).toBeTypeOf('function');
    expect(listQuery).toBeTypeOf('function');
  });

  it('is checked on both outcomes: the cases hold accepted and refused bodies', () => {
    const plants = [...TABLE.map((json) => parseJson(json) as Plain), ...grid];
    const accepted = plants.filter((p) => reference(NewPlantDto, p).messages.length === 0);
    expect(accepted.length).toBeGreaterThan(20);
    expect(plants.length - accepted.length).toBeGreaterThan(500);
  });

  const cases: [string, new () => object, Plain[]][] = [
    [
      'NewPlantDto, the validation table',
      NewPlantDto,
      TABLE.map((json) => parseJson(json) as Plain),
    ],
    ['NewPlantDto, every combination of field values', NewPlantDto, grid],
    ['ListPlantsQueryDto, every combination of query values', ListPlantsQueryDto, queries],
  ];
  it.each(cases)('accepts exactly what class-validator accepts: %s', (_name, metatype, plains) => {
    const check = compileCheck(metatype);
    for (const plain of plains) {
      const expected = reference(metatype, plain);
      const got = check?.(plain);
      if (expected.messages.length > 0) {
        // Refused: left to class-validator, which writes the messages.
        expect(got, `${String(plain.id ?? plain.limit)}`).toBeUndefined();
      } else if (!got) {
        // Left undecided (an object value); class-validator accepts it on the slow path.
        expect(Object.values(plain).some((v) => typeof v === 'object' && v !== null)).toBe(true);
      }
    }
  });

  it.each(cases)(
    'gives the pipe the same answers and messages: %s',
    async (_n, metatype, plains) => {
      const pipe = new ApiValidationPipe();
      const type = metatype === ListPlantsQueryDto ? 'query' : 'body';
      const metadata: ArgumentMetadata = { type, metatype };
      for (const plain of plains) {
        const expected = reference(metatype, plain);
        if (expected.messages.length === 0) {
          const got = (await pipe.transform(plain, metadata)) as object;
          expect(got).toBeInstanceOf(metatype);
          expect(Object.entries(got)).toEqual(Object.entries(expected.instance));
        } else {
          const refused = await pipe.transform(plain, metadata).then(
            () => undefined,
            (error: Error) => error.message,
          );
          expect(refused).toBe(problemsMessage(expected.messages, []));
        }
      }
    },
  );

  it('knows every conversion: src uses class-transformer through @ConvertPlain only', () => {
    const src = fileURLToPath(new URL('../../', import.meta.url));
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' });
    const users = files.filter(
      (file) =>
        file.endsWith('.ts') &&
        !file.endsWith('.spec.ts') &&
        readFileSync(join(src, file), 'utf8').includes("from 'class-transformer'"),
    );
    expect(users).toEqual([join('common', 'validation', 'convert-plain.decorator.ts')]);
  });

  it('has no compiled form for nested validation: such a class stays with class-validator', () => {
    class Inner {
      @IsString()
      name!: string;
    }
    class Outer {
      @ValidateNested()
      inner!: Inner;
    }
    expect(compileCheck(Outer)).toBeUndefined();
    expect(compileCheck(Inner)).toBeTypeOf('function');
  });
});
