import { readFileSync } from 'node:fs';
import { parsePromql } from './promql-check.js';

/**
 * A Grafana dashboard's queries, ready for checkPromql, and the rules of the Grafana dashboard
 * linter that matter here, written out (the linter does not install from the registries we
 * reach): a `datasource` variable used by every panel, job and instance filtered by template
 * variables (no instance names in the file), rate windows of `$__rate_interval`, and each panel
 * with a title, a description and a unit.
 */

interface Target {
  expr?: string;
  datasource?: { uid?: string };
}

interface Panel {
  type: string;
  title?: string;
  description?: string;
  datasource?: { uid?: string };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: Target[];
  panels?: Panel[];
}

interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
}

export interface Dashboard {
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

export interface Query {
  /** Where it is in the file: a panel title or a variable name. */
  where: string;
  /** The expression with Grafana's interval macros replaced by a duration, so that it parses. */
  expr: string;
  /** As written in the file. */
  raw: string;
  panel: boolean;
}

export const readDashboard = (file: string): Dashboard =>
  JSON.parse(readFileSync(file, 'utf8')) as Dashboard;

const MACROS = /\$__(rate_interval|interval|range)\b/g;
const LABEL_VALUES = /^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/;

export function panelsOf(dashboard: Dashboard): Panel[] {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');
}

/** Every panel query, and each `label_values(selector, label)` variable as `count by (label) (selector)`. */
export function queriesOf(dashboard: Dashboard): Query[] {
  const queries: Query[] = [];
  for (const panel of panelsOf(dashboard)) {
    for (const { expr } of panel.targets ?? []) {
      if (expr === undefined) continue;
      queries.push({
        where: panel.title ?? '?',
        raw: expr,
        expr: expr.replace(MACROS, '5m'),
        panel: true,
      });
    }
  }
  for (const variable of dashboard.templating.list.filter((v) => v.type === 'query')) {
    const raw = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    const [, selector, label] = LABEL_VALUES.exec(raw) ?? [];
    const expr = selector === undefined ? raw : `count by (${label}) (${selector})`;
    queries.push({ where: `variable ${variable.name}`, raw, expr, panel: false });
  }
  return queries;
}

export function lintDashboard(dashboard: Dashboard): string[] {
  const problems: string[] = [];
  const variables = new Map(dashboard.templating.list.map((v) => [v.name, v]));
  const source = variables.get('datasource');
  if (source?.type !== 'datasource' || source.query !== 'prometheus') {
    problems.push('no `datasource` variable of type datasource for prometheus');
  }
  for (const panel of panelsOf(dashboard)) {
    const where = `panel ${panel.title ?? '(no title)'}`;
    if (!panel.title || !panel.description) problems.push(`${where}: no title or description`);
    if (!panel.fieldConfig?.defaults?.unit) problems.push(`${where}: no unit`);
    const sources = [panel.datasource, ...(panel.targets ?? []).map((t) => t.datasource)];
    if (sources.some((s) => s?.uid !== '${datasource}')) {
      problems.push(`${where}: a data source other than \${datasource}`);
    }
  }
  for (const query of queriesOf(dashboard)) problems.push(...lintQuery(query, variables));
  return problems;
}

function lintQuery(query: Query, variables: Map<string, Variable>): string[] {
  const problems: string[] = [];
  for (const used of query.raw.matchAll(/\$([a-zA-Z_]\w*)/g)) {
    const name = used[1] ?? '';
    if (!name.startsWith('__') && !variables.has(name)) {
      problems.push(`${query.where}: uses $${name}, which is no variable`);
    }
  }
  if (!query.panel) return problems;
  for (const window of query.raw.matchAll(/\[([^\]]*)\]/g)) {
    if (window[1] !== '$__rate_interval') {
      problems.push(`${query.where}: window [${window[1]}] instead of [$__rate_interval]`);
    }
  }
  for (const { name, matchers } of parsePromql(query.expr).selectors) {
    for (const label of ['job', 'instance']) {
      if (!matchers.some((m) => m.label === label && m.op === '=~' && m.value === `$${label}`)) {
        problems.push(`${query.where}: ${name} not filtered by ${label}=~"$${label}"`);
      }
    }
  }
  return problems;
}
