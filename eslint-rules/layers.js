/**
 * Enforces the dependency direction between the folders of src/ (see docs/development.md
 * "Layout"): each layer may import only the public entry point (index.js) of the
 * layers listed for it, and nothing else of ours. The platform-free layers, and every
 * file a browser entry point reaches through its imports wherever it lives, use no Node
 * module, no Node-only package and no Node-only global either.
 */
import { builtinModules } from 'node:module';
import path from 'node:path';
import { browserReach } from './browser-reach.js';

const allowed = {
  flow: [],
  // rxjs's classes, file by file (src/rx/index.ts); none of the Deno edge's modules reach it.
  rx: ['flow'],
  protocol: ['flow'],
  io: ['protocol', 'flow'],
  contracts: ['protocol', 'flow'],
  dispatcher: ['protocol', 'contracts', 'flow', 'rx'],
  operations: ['dispatcher', 'protocol', 'contracts', 'flow', 'rx'],
  testing: ['dispatcher', 'protocol', 'conformance', 'flow'],
  webtransport: ['protocol', 'flow'],
  outcome: ['protocol', 'contracts', 'flow'],
  transports: ['dispatcher', 'protocol', 'io', 'webtransport', 'outcome', 'flow'],
  // Platform-free: only types of the WebTransport layer (the import walk skips those).
  client: ['protocol', 'webtransport', 'contracts', 'flow', 'rx'],
  'client-node': ['client', 'protocol', 'io', 'webtransport', 'contracts', 'flow'],
  conformance: ['protocol', 'webtransport', 'contracts', 'flow'],
  fleet: ['dispatcher', 'protocol', 'client', 'contracts', 'operations', 'flow'],
  'fan-out': ['dispatcher', 'protocol', 'client', 'contracts', 'flow'],
  server: ['dispatcher', 'protocol', 'transports', 'operations', 'fleet', 'fan-out', 'flow'],
  cli: ['server', 'client', 'client-node', 'protocol', 'conformance', 'contracts', 'outcome', 'fleet', 'flow'],
  lab: ['client', 'outcome', 'flow'],
};

/** Layers the browser client or the Lab load: no Node module, no Node-only global. */
const platformFree = new Set(['flow', 'rx', 'protocol', 'contracts', 'outcome', 'client', 'lab']);
/** What browsers load (the Lab's bundle, callwire/client/browser): every file they reach is held platform-free. */
export const browserEntries = ['src/lab/main.ts', 'src/client/index.ts'];
const nodeGlobals = ['setImmediate', 'clearImmediate', 'Buffer', 'process', 'require', 'module', '__dirname', '__filename', 'global'];
/** Packages that run in Node only (a socket library, the engine's client, NATS's Node transport, metrics). */
const nodeOnlyPackages = ['ws', '@fails-components/webtransport', 'dockerode', '@nats-io/transport-node', 'prom-client'];
const isNodeModule = (spec) =>
  spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0]) || nodeOnlyPackages.some((name) => spec === name || spec.startsWith(`${name}/`));
const typeOnly = (node) =>
  node.importKind === 'type' ||
  node.exportKind === 'type' ||
  (node.specifiers?.length > 0 && node.specifiers.every((s) => s.importKind === 'type' || s.exportKind === 'type'));

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
      nodeOnly: "'{{from}}' runs in browsers too: it may not use Node's '{{name}}' (Node-side I/O lives in src/io, src/client-node or a transport).",
      nodeOnlyReached: "{{file}} is reached from the browser entry {{chain}}: it may not use Node's '{{name}}' (move the Node-only part to src/client-node, src/io or a transport).",
    },
  },
  create(context) {
    const file = context.filename;
    const srcRoot = path.join(context.cwd, 'src');
    const from = layerOf(file, srcRoot);
    const chain = browserReach(context.cwd, browserEntries).get(path.resolve(file));
    if (!from && !chain) return {};
    const free = chain !== undefined || platformFree.has(from.name);
    const nodeOnly = (node, name) =>
      chain
        ? context.report({ node, messageId: 'nodeOnlyReached', data: { file: path.relative(context.cwd, file), chain: chain.map((f) => path.relative(context.cwd, f)).join(' → '), name } })
        : context.report({ node, messageId: 'nodeOnly', data: { from: from.name, name } });
    function check(node) {
      const spec = node.source && node.source.value;
      if (typeof spec !== 'string') return;
      if (free && isNodeModule(spec) && !typeOnly(node)) return nodeOnly(node, spec);
      if (!spec.startsWith('.') || !from) return;
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
        nodeOnly(reference.identifier, name);
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
