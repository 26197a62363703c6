/**
 * Enforces the dependency direction between the folders of src/ (see docs/development.md
 * "Layout"): each layer may import only the public entry point (index.js) of the
 * layers listed for it, and nothing else of ours.
 */
import path from 'node:path';

const allowed = {
  protocol: [],
  contracts: ['protocol'],
  dispatcher: ['protocol', 'contracts'],
  operations: ['dispatcher', 'protocol', 'contracts'],
  testing: ['dispatcher', 'protocol', 'conformance'],
  webtransport: ['protocol'],
  terminal: ['protocol'],
  transports: ['dispatcher', 'protocol', 'webtransport', 'terminal'],
  client: ['protocol', 'webtransport', 'contracts'],
  conformance: ['protocol', 'webtransport', 'contracts'],
  server: ['dispatcher', 'protocol', 'transports', 'operations'],
  cli: ['server', 'client', 'protocol', 'conformance', 'contracts', 'terminal'],
  lab: ['client', 'terminal'],
};

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
    },
  },
  create(context) {
    const file = context.filename;
    const srcRoot = path.join(context.cwd, 'src');
    const from = layerOf(file, srcRoot);
    if (!from) return {};
    function check(node) {
      const spec = node.source && node.source.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = layerOf(path.resolve(path.dirname(file), spec), srcRoot);
      if (!target || target.name === from.name) return;
      const ok = allowed[from.name] ?? [];
      if (!ok.includes(target.name)) {
        context.report({ node, messageId: 'forbidden', data: { from: from.name, to: target.name, allowed: ok.join(', ') || 'none' } });
      } else if (target.rest !== 'index.js') {
        context.report({ node, messageId: 'notEntry', data: { to: target.name, spec } });
      }
    }
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};
