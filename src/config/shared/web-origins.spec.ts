import { describe, expect, it } from 'vitest';
import { parseCorsOrigins } from './web-origins.js';

describe('parseCorsOrigins', () => {
  it.each([
    [undefined, 'off'],
    ['', 'off'],
    [' , ', 'off'],
    ['*', '*'],
    [' * ', '*'],
    ['https://docs.example.com', ['https://docs.example.com']],
    [
      'https://a.example, http://localhost:5173,https://a.example',
      ['https://a.example', 'http://localhost:5173'],
    ],
  ])('reads %j', (value, expected) => {
    expect(parseCorsOrigins(value)).toEqual(expected);
  });

  it.each([
    'https://a.example/',
    'https://a.example/path',
    'a.example',
    'ftp://a.example',
    'https://user@a.example',
    'https://a.example?x=1',
    '*,https://a.example',
    'null',
    'https://A.example',
  ])('refuses %j', (value) => {
    expect(parseCorsOrigins(value)).toBeUndefined();
  });
});
