/**
 * Summarizes a .cpuprofile by package and function:
 *   node bench/profile-summary.mjs <file.cpuprofile> [requests served during the profile]
 * (a profile kept with `--profile --keep` brings its window and requests in window.json)
 * `npm run bench -- --profile` records one under load and runs this on it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { summarizeProfile } from './lib/cpuprofile.mjs';

const [file, requests] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [requests]\n');
  process.exit(2);
}
// A profile kept by `npm run bench -- --profile --keep` has its measured window beside it.
const sidecar = join(dirname(file), 'window.json');
const kept = existsSync(sidecar) ? JSON.parse(readFileSync(sidecar, 'utf8')) : {};
process.stdout.write(
  `${summarizeProfile(file, {
    title: `CPU profile ${file}`,
    requests: Number(requests) || kept.requests,
    window: kept.window,
  })}\n`,
);
