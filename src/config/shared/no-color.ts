/** no-color.org: NO_COLOR present and not empty turns the pretty log lines off. */
export function noColorRequested(value: string | undefined): boolean {
  return value !== undefined && value !== '';
}
