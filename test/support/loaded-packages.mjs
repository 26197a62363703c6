// Run as `node --import tsx loaded-packages.mjs ENTRY [STEP]`: imports ENTRY (a library entry,
// .ts through tsx or built .js), optionally takes one STEP with it, and prints as JSON the npm
// packages the process loaded and every file: ES modules as the resolve hook saw them,
// CommonJS ones from require's cache (which also holds those an ES module imported).
// `node loaded-packages.mjs dist/cli/main.js -- ARGS…` runs the CLI with ARGS instead, and
// prints the JSON as its last line.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const log = join(tmpdir(), `callwire-loaded-${process.pid}.txt`);
writeFileSync(log, '');
const hook = `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) { const resolved = await next(specifier, context); appendFileSync(log, resolved.url + '\\n'); return resolved; }`;
register(`data:text/javascript,${encodeURIComponent(hook)}`, { data: { log } });

const steps = {
  // A server with its defaults but no listener it does not need: metrics are on by default.
  async start(lib) {
    const server = await lib.startServer({ port: 0, webTransportPort: false, http3: false });
    await server.close();
  },
  async dockerEngine(lib) {
    lib.dockerEngine('unix:///nonexistent/callwire-docker.sock');
  },
};

const [entry, step, ...cliArgs] = process.argv.slice(2);
if (step === '--') {
  process.argv = [process.argv[0], entry, ...cliArgs];
  await import(entry);
} else {
  const lib = await import(entry);
  if (step) await steps[step](lib);
}
const urls = [...readFileSync(log, 'utf8').split('\n'), ...Object.keys(createRequire(import.meta.url).cache)];
rmSync(log);
const packages = new Set();
for (const url of urls) {
  const path = url.split('/node_modules/').at(-1);
  if (path === url) continue;
  const parts = path.split('/');
  packages.add(parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]);
}
process.stdout.write(`\n${JSON.stringify({ packages: [...packages].sort(), files: [...new Set(urls)].filter((url) => url !== '') })}`);
