// A vitest reporter that saves the run's unhandled errors as JSON in UNHANDLED_ERRORS_FILE: such
// an error fails the run without failing a test, and the JSON report leaves it out.
import { writeFileSync } from 'node:fs';

export default class UnhandledErrorsReporter {
  onTestRunEnd(_testModules, unhandledErrors) {
    const file = process.env.UNHANDLED_ERRORS_FILE;
    if (!file) return;
    const errors = unhandledErrors.map((error) => ({
      message: `${error.name ?? 'Error'}: ${error.message ?? error}`,
      file: error.VITEST_TEST_PATH,
      test: error.VITEST_TEST_NAME,
      stack: error.stack,
    }));
    writeFileSync(file, JSON.stringify(errors, null, 2));
  }
}
