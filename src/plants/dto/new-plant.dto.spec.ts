import type { ArgumentMetadata } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../common/json/lossless-json.js';
import { ApiValidationPipe } from '../../common/validation/validation.pipe.js';
import { NewPlantDto } from './new-plant.dto.js';

const pipe = new ApiValidationPipe();
const body: ArgumentMetadata = { type: 'body', metatype: NewPlantDto };

/** The body as the JSON middleware hands it over, through the global pipe. */
const validate = (json: string) => pipe.transform(parseJson(json), body);

describe('NewPlantDto through ApiValidationPipe', () => {
  it.each([
    ['{"id": 1, "name": "Fern"}', { id: 1n, name: 'Fern' }],
    [
      '{"id": 9007199254740993, "name": "n", "tag": "t"}',
      { id: 9007199254740993n, name: 'n', tag: 't' },
    ],
    ['{"id": -9223372036854775808, "name": "n"}', { id: -9223372036854775808n, name: 'n' }],
  ])('accepts %s as bigint ids', async (json, expected) => {
    const plant = await validate(json);
    expect(plant).toBeInstanceOf(NewPlantDto);
    expect({ ...(plant as NewPlantDto) }).toEqual(expected);
  });

  it.each([
    [
      '{"id": "5", "name": "x"}',
      'id must be an integer from -9223372036854775808 to 9223372036854775807',
    ],
    ['{"id": 1.5, "name": "x"}', 'id must be an integer'],
    ['{"id": 9223372036854775808, "name": "x"}', 'id must be an integer'],
    ['{"name": "x"}', 'id is required'],
    ['{"id": 1}', 'name is required'],
    ['{"id": 1, "name": ""}', 'name must be at least 1 character'],
    [`{"id": 1, "name": "${'n'.repeat(257)}"}`, 'name must be at most 256 characters'],
    ['{"id": 1, "name": "a\\u0000"}', 'name must not contain NUL characters'],
    ['{"id": 1, "name": "\\ud800"}', 'name must be well-formed Unicode text'],
    ['{"id": 1, "name": "x", "tag": null}', 'tag must be a string'],
    [`{"id": 1, "name": "x", "tag": "${'t'.repeat(65)}"}`, 'tag must be at most 64 characters'],
    ['{"id": 1, "name": "x", "__proto__": {}}', 'property __proto__ is not allowed'],
    ['{"id": 1, "name": "x", "constructor": 1}', 'property constructor is not allowed'],
    ['[]', 'the request body must be a JSON object'],
    ['null', 'the request body must be a JSON object'],
  ])('refuses %s: %s', async (json, message) => {
    await expect(validate(json)).rejects.toThrow(message);
  });

  it('names every bad field at once, counted', async () => {
    await expect(validate('{"id": "1", "name": 2, "tag": 3}')).rejects.toThrow(
      '3 problems: id must be an integer from -9223372036854775808 to 9223372036854775807; name must be a string; tag must be a string',
    );
  });

  it('names bad fields and unknown properties together', async () => {
    await expect(validate('{"id": 1.5, "name": "", "color": "red"}')).rejects.toThrow(
      /^3 problems: id must be an integer[^;]*; name must be at least 1 character; property color is not allowed$/,
    );
  });

  it('counts every unknown property but names only the first 5', async () => {
    const extra = Array.from({ length: 7 }, (_, i) => `"p${i}": 0`).join(', ');
    await expect(validate(`{"id": 1, "name": "", ${extra}}`)).rejects.toThrow(
      '8 problems: name must be at least 1 character; property p0 is not allowed; ' +
        'property p1 is not allowed; property p2 is not allowed; property p3 is not allowed; ' +
        'property p4 is not allowed; and 2 more unknown properties (7 in all)',
    );
  });
});
