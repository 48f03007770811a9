// Prints one line per failed test of a vitest JSON report: the report, the file, the test's
// name and the first line of why, so the end of CI's output says what failed and in which run;
// then the run's unhandled errors, saved beside the report by .ci/unhandled-errors.mjs.
import { existsSync, readFileSync } from 'node:fs';
import { basename, relative } from 'node:path';

const firstLine = (text) => (text ?? '').split('\n')[0].slice(0, 300);
const run = basename(process.argv[2], '.json');
const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const file of report.testResults ?? []) {
  const name = `${run}: ${relative(process.cwd(), file.name)}`;
  const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
  for (const test of failed) {
    console.log(`${name} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`);
  }
  // A file that did not load, or whose hook failed, has no failed test: its message if any.
  if (file.status === 'failed' && failed.length === 0) {
    console.log(`${name}: ${firstLine(file.message) || 'a hook or the file failed (see above)'}`);
  }
}

const unhandled = process.argv[2].replace(/\.json$/, '.unhandled.json');
for (const error of existsSync(unhandled) ? JSON.parse(readFileSync(unhandled, 'utf8')) : []) {
  const where = error.file ? ` in ${relative(process.cwd(), error.file)}` : '';
  const test = error.test ? ` > ${error.test}` : '';
  // The top frames say where it was thrown: one line, as CI keeps only the end of the output.
  const frames = (error.stack ?? '')
    .split('\n')
    .slice(1, 4)
    .map((frame) => frame.trim());
  console.log(
    `${run}: unhandled error${where}${test}: ${firstLine(error.message)} ${frames.join(' ')}`,
  );
}
