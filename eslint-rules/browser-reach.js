/**
 * The files a browser entry point reaches through its imports, as a bundler would
 * follow them: relative static imports and re-exports, side-effect imports and dynamic
 * `import()`, each resolved from `.js` to the `.ts` beside it. Imports of types only are
 * erased by the compiler and followed no further. A module's imports are read once per
 * version of the file (its mtime), so a lint run parses each file once.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** file → { mtimeMs, imports } */
const parsed = new Map();

/**
 * Every file reached from `entries` (paths relative to `cwd`), each mapped to the chain
 * of files from its entry point to it.
 */
export function browserReach(cwd, entries) {
  const chains = new Map();
  const queue = [];
  for (const entry of entries) {
    const file = path.resolve(cwd, entry);
    if (chains.has(file) || !exists(file)) continue;
    chains.set(file, [file]);
    queue.push(file);
  }
  while (queue.length > 0) {
    const file = queue.shift();
    for (const next of importsOf(file)) {
      if (chains.has(next)) continue;
      chains.set(next, [...chains.get(file), next]);
      queue.push(next);
    }
  }
  return chains;
}

function exists(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function importsOf(file) {
  let mtimeMs;
  try {
    mtimeMs = statSync(file).mtimeMs;
  } catch {
    return [];
  }
  const cached = parsed.get(file);
  if (cached?.mtimeMs === mtimeMs) return cached.imports;
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs = [];
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && !importsTypesOnly(node.importClause)) specs.push(node.moduleSpecifier.text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !exportsTypesOnly(node)) specs.push(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      specs.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const imports = specs.filter((spec) => spec.startsWith('.')).map((spec) => resolve(path.dirname(file), spec)).filter((f) => f !== undefined);
  parsed.set(file, { mtimeMs, imports });
  return imports;
}

function importsTypesOnly(clause) {
  if (!clause) return false; // `import './x.js'`: run for its effects
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return !clause.name && named !== undefined && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
}

function exportsTypesOnly(node) {
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
}

function resolve(dir, spec) {
  const base = path.resolve(dir, spec);
  const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base, `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find(exists);
}
