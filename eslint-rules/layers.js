/**
 * Enforces the dependency direction between the folders of src/ (see docs/development.md
 * "Layout"): each layer may import only the public entry point (index.js) of the
 * layers listed for it, and nothing else of ours. The platform-free layers, which
 * browsers load, use no Node module and no Node-only global either.
 */
import { builtinModules } from 'node:module';
import path from 'node:path';

const allowed = {
  flow: [],
  protocol: ['flow'],
  io: ['protocol', 'flow'],
  contracts: ['protocol', 'flow'],
  dispatcher: ['protocol', 'contracts', 'flow'],
  operations: ['dispatcher', 'protocol', 'contracts', 'flow'],
  testing: ['dispatcher', 'protocol', 'conformance', 'flow'],
  webtransport: ['protocol', 'flow'],
  outcome: ['protocol', 'contracts', 'flow'],
  transports: ['dispatcher', 'protocol', 'io', 'webtransport', 'outcome', 'flow'],
  client: ['protocol', 'io', 'webtransport', 'contracts', 'flow'],
  conformance: ['protocol', 'webtransport', 'contracts', 'flow'],
  fleet: ['dispatcher', 'protocol', 'client', 'contracts', 'operations', 'flow'],
  server: ['dispatcher', 'protocol', 'transports', 'operations', 'fleet', 'flow'],
  cli: ['server', 'client', 'protocol', 'conformance', 'contracts', 'outcome', 'fleet', 'flow'],
  lab: ['client', 'outcome', 'flow'],
};

/** Layers the browser client or the Lab load: no Node module, no Node-only global. */
const platformFree = new Set(['flow', 'protocol', 'contracts', 'outcome', 'lab']);
const nodeGlobals = ['setImmediate', 'clearImmediate', 'Buffer', 'process', 'require', 'module', '__dirname', '__filename', 'global'];
const isNodeModule = (spec) => spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0]);

function layerOf(file, srcRoot) {
  const rel = path.relative(srcRoot, file);
  if (rel.startsWith('..')) return undefined;
  const [first, ...rest] = rel.split(path.sep);
  return rest.length === 0 ? undefined : { name: first, rest: rest.join('/') };
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'layer boundaries inside src/' },
    schema: [],
    messages: {
      forbidden: "'{{from}}' may not import from '{{to}}' (allowed: {{allowed}}).",
      notEntry: "Import '{{to}}' through its public entry point '{{to}}/index.js', not '{{spec}}'.",
      nodeOnly: "'{{from}}' runs in browsers too: it may not use Node's '{{name}}' (Node-side I/O lives in src/io or a transport).",
    },
  },
  create(context) {
    const file = context.filename;
    const srcRoot = path.join(context.cwd, 'src');
    const from = layerOf(file, srcRoot);
    if (!from) return {};
    const free = platformFree.has(from.name);
    function check(node) {
      const spec = node.source && node.source.value;
      if (typeof spec !== 'string') return;
      if (free && isNodeModule(spec)) {
        context.report({ node, messageId: 'nodeOnly', data: { from: from.name, name: spec } });
        return;
      }
      if (!spec.startsWith('.')) return;
      const target = layerOf(path.resolve(path.dirname(file), spec), srcRoot);
      if (!target || target.name === from.name) return;
      const ok = allowed[from.name] ?? [];
      if (!ok.includes(target.name)) {
        context.report({ node, messageId: 'forbidden', data: { from: from.name, to: target.name, allowed: ok.join(', ') || 'none' } });
      } else if (target.rest !== 'index.js') {
        context.report({ node, messageId: 'notEntry', data: { to: target.name, spec } });
      }
    }
    // A Node global used as a value: declared by the config (process, Buffer) or not at all.
    function checkGlobals(node) {
      const scope = context.sourceCode.getScope(node);
      const globalScope = scope.type === 'global' ? scope : scope.upper;
      const references = [...globalScope.through, ...nodeGlobals.flatMap((name) => globalScope.set.get(name)?.references ?? [])];
      for (const reference of references) {
        const name = reference.identifier.name;
        if (!nodeGlobals.includes(name) || reference.resolved?.defs.length || reference.isValueReference === false) continue;
        context.report({ node: reference.identifier, messageId: 'nodeOnly', data: { from: from.name, name } });
      }
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
      ...(free ? { 'Program:exit': checkGlobals } : {}),
    };
  },
};
