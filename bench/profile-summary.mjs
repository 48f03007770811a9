/**
 * Summarizes a .cpuprofile by package and function:
 *   node bench/profile-summary.mjs <file.cpuprofile> [requests served during the profile]
 * `npm run bench -- --profile` records one under load and runs this on it.
 */
import { summarizeProfile } from './lib/cpuprofile.mjs';

const [file, requests] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [requests]\n');
  process.exit(2);
}
process.stdout.write(
  `${summarizeProfile(file, { title: `CPU profile ${file}`, requests: Number(requests) || undefined })}\n`,
);
