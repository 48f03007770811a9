import type { z } from 'zod';

/** `['mcpServers', 'github', 'args', 1]` → `mcpServers.github.args[1]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    return out === '' ? String(key) : `${out}.${String(key)}`;
  }, '');
}

/** One line per zod issue, naming where it is; never the value, which may be a secret. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], prefix: string[] = []): string[] {
  return issues
    .map((issue) => {
      const extra = issue.code === 'unrecognized_keys' ? issue.keys : [];
      if (extra.length > 0) {
        return extra
          .map((key) => `${formatPath([...prefix, ...issue.path, key])} is not a known key`)
          .join('\n');
      }
      const where = formatPath([...prefix, ...issue.path]);
      if (issue.code === 'invalid_key') {
        return issue.issues.map((inner) => `${where}: ${inner.message}`).join('\n');
      }
      if (where === '' || issue.message.startsWith(where)) return issue.message;
      return `${where} ${issue.message}`;
    })
    .flatMap((line) => line.split('\n'));
}
