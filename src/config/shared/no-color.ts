/**
 * no-color.org: NO_COLOR "when present and not an empty string" turns colour (here: the pretty
 * terminal log lines) off. `.env.example` loaded with `--env-file` used to set it empty.
 */
export function noColorRequested(value: string | undefined): boolean {
  return value !== undefined && value !== '';
}
