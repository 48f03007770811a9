// Prints one line per failed test of a vitest JSON report: the report, the file, the test's
// name and the first line of why, so the end of CI's output says what failed and in which run.
import { readFileSync } from 'node:fs';
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
