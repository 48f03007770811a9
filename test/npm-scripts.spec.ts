import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (file: string): string => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('npm scripts', () => {
  // On a host V8 grows the young generation to 128 MiB under load (bench/README.md, "Memory in
  // the pod"); the scripts size it as the image does, which sets it in NODE_OPTIONS.
  it("run each bundle with the image's young-generation size", () => {
    const imageOptions = /\n\s+NODE_OPTIONS=(\S+) \\\n/.exec(read('Dockerfile'))?.[1];
    expect(imageOptions).toMatch(/^--max-semi-space-size=\d+$/);
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    const bundles = {
      start: 'main',
      'relay-server': 'relay-server',
      'webhook-worker': 'webhook-worker',
    };
    for (const [name, bundle] of Object.entries(bundles)) {
      expect(scripts[name], name).toBe(`node ${imageOptions} dist/bundle/${bundle}.js`);
    }
  });
});
