import type TS from 'typescript';
import { requireOptional } from '../pipeline/installed-package.js';

// TypeScript's parser (23 MB) is an optional dependency, loaded by the first generator that parses JavaScript.
let ts: typeof TS;
/** An exported function found in a source file, and how to stub it: replace [start, end) with `replacement`. */
export interface FunctionSpan {
  name: string;
  start: number;
  end: number;
  replacement: string;
}

export const JS_STUB_BODY = "{ throw new Error('not implemented'); }";

/**
 * The exported functions of a JavaScript or TypeScript module, found by parsing it with
 * the TypeScript compiler (not a lexer of our own): ESM (`export function f`, `export
 * const f = () => ...`, `export default function`), and CommonJS (`module.exports =
 * function`, `module.exports = { f() {}, g: () => {}, h }`, `exports.f = ...`,
 * `module.exports.f = ...`, where a name bound to a top-level function stubs that
 * function). Each span is the function's body; its stub keeps the signature and the doc
 * comment, and the body becomes `{ throw new Error('not implemented'); }`. `file` picks
 * the dialect (TypeScript, JSX) by its extension.
 */
export function findJsFunctions(src: string, file = 'module.ts'): FunctionSpan[] {
  ts ??= requireOptional<typeof TS>('typescript', 'generate (for JavaScript and TypeScript repositories)');
  const sf = ts.createSourceFile(file, src, ts.ScriptTarget.Latest, false, scriptKind(file));
  const found = new Map<string, FunctionSpan>();
  const add = (name: string, fn: TS.Node | undefined) => {
    const body = fn ? bodyOf(fn) : undefined;
    if (!body || found.has(name)) return;
    found.set(name, { name, start: body.getStart(sf), end: body.end, replacement: JS_STUB_BODY });
  };
  // Top-level functions by name, for CommonJS exports that name them.
  const topLevel = new Map<string, TS.Node>();
  for (const st of sf.statements) {
    if (ts.isFunctionDeclaration(st) && st.name && st.body) topLevel.set(st.name.text, st);
    if (ts.isVariableStatement(st))
      for (const d of st.declarationList.declarations)
        if (ts.isIdentifier(d.name) && isFunctionLike(d.initializer)) topLevel.set(d.name.text, unwrap(d.initializer!)!);
  }
  const byName = (e: TS.Expression | undefined) => (e && ts.isIdentifier(e) ? topLevel.get(e.text) : undefined);
  for (const st of sf.statements) {
    const exported = ts.canHaveModifiers(st) && (ts.getModifiers(st) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (ts.isFunctionDeclaration(st) && exported && st.body) {
      const isDefault = (ts.getModifiers(st) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
      add(st.name?.text ?? (isDefault ? 'default' : ''), st);
    } else if (ts.isVariableStatement(st) && exported) {
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name) && isFunctionLike(d.initializer)) add(d.name.text, unwrap(d.initializer!));
    } else if (ts.isExportAssignment(st) && !st.isExportEquals) {
      const fn = isFunctionLike(st.expression) ? unwrap(st.expression) : byName(st.expression);
      add(functionName(fn) ?? 'default', fn);
    } else if (ts.isExpressionStatement(st) && ts.isBinaryExpression(st.expression) && st.expression.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      const { left, right } = st.expression;
      const target = commonJsTarget(left);
      if (target === null) continue;
      if (target === 'module.exports') {
        if (isFunctionLike(right)) add(functionName(unwrap(right)) ?? 'module.exports', unwrap(right));
        else if (ts.isIdentifier(right) && topLevel.has(right.text)) add(right.text, topLevel.get(right.text));
        else if (ts.isObjectLiteralExpression(right)) {
          for (const p of right.properties) {
            const name = p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined;
            if (!name) continue;
            if (ts.isMethodDeclaration(p)) add(name, p);
            else if (ts.isPropertyAssignment(p)) add(name, isFunctionLike(p.initializer) ? unwrap(p.initializer) : byName(p.initializer));
            else if (ts.isShorthandPropertyAssignment(p)) add(name, topLevel.get(name));
          }
        }
      } else add(target, isFunctionLike(right) ? unwrap(right) : byName(right));
    }
  }
  return [...found.values()].filter((f) => f.name).sort((a, b) => a.start - b.start);
}

function scriptKind(file: string): TS.ScriptKind {
  if (/\.tsx$/.test(file)) return ts.ScriptKind.TSX;
  if (/\.jsx$/.test(file)) return ts.ScriptKind.JSX;
  if (/\.[cm]?js$/.test(file)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

/** `module.exports` -> 'module.exports'; `module.exports.f` or `exports.f` -> 'f'; anything else null. */
function commonJsTarget(e: TS.Expression): string | null {
  const isModuleExports = (x: TS.Expression) =>
    ts.isPropertyAccessExpression(x) && ts.isIdentifier(x.expression) && x.expression.text === 'module' && x.name.text === 'exports';
  if (isModuleExports(e)) return 'module.exports';
  if (ts.isPropertyAccessExpression(e) && (isModuleExports(e.expression) || (ts.isIdentifier(e.expression) && e.expression.text === 'exports')))
    return e.name.text;
  return null;
}

/** A function or arrow expression, possibly parenthesized or asserted (`(() => 1) as F`). */
function isFunctionLike(e: TS.Expression | undefined): boolean {
  const u = unwrap(e);
  return Boolean(u && (ts.isFunctionExpression(u) || ts.isArrowFunction(u)));
}

function unwrap(e: TS.Expression | undefined): TS.Expression | undefined {
  let x = e;
  while (x && (ts.isParenthesizedExpression(x) || ts.isAsExpression(x) || ts.isSatisfiesExpression(x) || ts.isTypeAssertionExpression(x))) x = x.expression;
  return x;
}

function functionName(e: TS.Node | undefined): string | undefined {
  return e && (ts.isFunctionExpression(e) || ts.isFunctionDeclaration(e)) && e.name ? e.name.text : undefined;
}

/** The body to replace: a block, or an arrow's expression body. */
function bodyOf(fn: TS.Node): TS.Node | undefined {
  if (ts.isFunctionDeclaration(fn) || ts.isFunctionExpression(fn) || ts.isMethodDeclaration(fn) || ts.isArrowFunction(fn)) return fn.body;
  return undefined;
}

/** The source with one function's body replaced by its stub. */
export function applyStub(src: string, span: FunctionSpan): string {
  return src.slice(0, span.start) + span.replacement + src.slice(span.end);
}
