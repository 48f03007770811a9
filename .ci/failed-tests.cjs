// Prints one line per failed test of a vitest JSON report: its file, its name and the first
// line of why, so the end of CI's output says what failed.
const report = require(require('node:path').resolve(process.argv[2]));
for (const file of report.testResults ?? []) {
  const name = require('node:path').relative(process.cwd(), file.name);
  const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
  for (const test of failed) {
    const why = (test.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300);
    console.log(`${name} > ${test.fullName}: ${why}`);
  }
  // A file that did not load has no failed test, only its message.
  if (file.status === 'failed' && failed.length === 0) {
    console.log(`${name}: ${(file.message ?? '').split('\n')[0].slice(0, 300)}`);
  }
}
