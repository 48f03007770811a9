/**
 * Every configuration problem found at start, reported at once. `main.ts` prints the message
 * and exits with 78 (EX_CONFIG from sysexits.h), so a crash loop in Kubernetes shows the cause.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `Invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
    this.name = 'ConfigError';
  }
}

export const EX_CONFIG = 78;
