/** `${VAR}`, `${VAR:-default}` in MCP args and env: secrets come from a Secret, not a ConfigMap. */
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** The expanded text, and the variables referenced without a default that are not set. */
export function expandVariables(
  template: string,
  environment: Readonly<Record<string, string | undefined>>,
) {
  const missing: string[] = [];
  const value = template.replace(REFERENCE, (_match, name: string, fallback?: string) => {
    // Own values only: `${constructor}` must not expand to process.env's inherited Object.
    const current = Object.hasOwn(environment, name) ? environment[name] : undefined;
    if (typeof current === 'string' && current !== '') return current;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  return { value, missing };
}
