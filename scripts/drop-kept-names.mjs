// keepNames' `__name` redefines `.name` at run time: on node-postgres's Query, one per query, that
// cost a fifth of the throughput. Classes get their names in the source; needless calls go.
import * as acorn from 'acorn';
import { ancestor, full } from 'acorn-walk';

/** The name JavaScript gives an anonymous function at this place (NamedEvaluation). */
function nameFromPlace(parent, node) {
  if (parent.type === 'VariableDeclarator' && parent.init === node) return parent.id.name;
  if (parent.type === 'AssignmentExpression' && parent.operator === '=' && parent.right === node) {
    return parent.left.type === 'Identifier' ? parent.left.name : undefined;
  }
  const keyed = ['Property', 'PropertyDefinition'].includes(parent.type) && parent.value === node;
  if (!keyed || parent.computed) return undefined;
  const key = parent.key.name ?? parent.key.value;
  // `{ __proto__: f }` sets the prototype: no name is given there.
  return parent.type === 'Property' && key === '__proto__' ? undefined : key;
}

/** N of `__name(<argument of type argType>, "N")`. */
function keptName(call, argType) {
  const isCall = call?.type === 'CallExpression' && call.callee.name === '__name';
  if (!isCall || call.arguments[0]?.type !== argType) return undefined;
  return call.arguments[1].value;
}

/** `__name(this, "N")` alone in a static block, first in a class body: N. */
function keptClassName(classNode) {
  const [first] = classNode.body.body;
  if (first?.type !== 'StaticBlock' || first.body.length !== 1) return undefined;
  return keptName(first.body[0].expression, 'ThisExpression');
}

/** A name a class may take in the source: an identifier, not a reserved word. */
function isPlainName(name) {
  if (!/^[\p{ID_Start}$_][\p{ID_Continue}$]*$/u.test(name)) return false;
  try {
    acorn.parse(`(class ${name} {})`, { ecmaVersion: 'latest', sourceType: 'module' });
    return true;
  } catch {
    return false;
  }
}

// The identifiers named `name` in `node`; undefined when renaming is not safe: a shorthand
// property's key would change, or a class inside keeps the same name.
function identifiersIn(node, name) {
  const found = [];
  let unsafe = false;
  const shorthand = (property) => property.shorthand && property.key.name === name;
  full(node, (child) => {
    if (child.type === 'Identifier' && child.name === name) found.push(child);
    if (child.type === 'Property' && shorthand(child)) unsafe = true;
    if (child.type === 'ObjectPattern' && child.properties.some(shorthand)) unsafe = true;
    const isClass = child.type === 'ClassExpression' || child.type === 'ClassDeclaration';
    if (isClass && child !== node && keptClassName(child) === name) unsafe = true;
  });
  return unsafe ? undefined : found;
}

// A class expression kept as N becomes `class N` (its id and its mentions inside renamed), unless
// N already means something else inside it.
function nameClass(node, edits) {
  const name = keptClassName(node);
  if (name === undefined) return;
  const block = node.body.body[0];
  if (node.id?.name !== name) {
    if (node.type !== 'ClassExpression' || !isPlainName(name)) return;
    if (identifiersIn(node, name)?.length !== 0) return;
    const own = node.id ? identifiersIn(node, node.id.name) : [];
    if (own === undefined) return;
    for (const id of own) edits.push([id.start, id.end, name]);
    if (!node.id)
      edits.push([node.start + 'class'.length, node.start + 'class'.length, ` ${name}`]);
  }
  edits.push([block.start, block.end, '']);
}

/** `__name(() => ..., "N")` where the function is named N anyway: the function alone. */
function unwrapFunction(node, ancestors, edits) {
  const fn = node.arguments[0];
  if (!/Function/.test(fn?.type ?? '') || keptName(node, fn.type) === undefined) return;
  const own = fn.id ? fn.id.name : nameFromPlace(ancestors.at(-2), node);
  if (own === keptName(node, fn.type))
    edits.push([node.start, fn.start, ''], [fn.end, node.end, '']);
}

/** `__name(f, "f");` after `function f`: an empty statement (it may be an `if`'s body). */
function dropStatement(node, edits) {
  const name = keptName(node.expression, 'Identifier');
  if (name !== undefined && name === node.expression.arguments[0].name) {
    edits.push([node.start, node.end, ';']);
  }
}

/** `code` with its classes named in the source and without the `__name` calls that changes. */
export function dropKeptNames(code) {
  const edits = [];
  ancestor(acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module' }), {
    ClassExpression: (node) => nameClass(node, edits),
    ClassDeclaration: (node) => nameClass(node, edits),
    CallExpression: (node, _state, ancestors) => unwrapFunction(node, ancestors, edits),
    ExpressionStatement: (node) => dropStatement(node, edits),
  });
  edits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const parts = [];
  let at = 0;
  for (const [start, end, text] of edits) {
    if (start < at) continue;
    parts.push(code.slice(at, start), text);
    at = end;
  }
  parts.push(code.slice(at));
  return parts.join('');
}
