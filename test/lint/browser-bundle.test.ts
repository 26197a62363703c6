import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterEach, describe, expect, it } from 'vitest';
import { browserReach } from '../../eslint-rules/browser-reach.js';
import layers, { browserEntries } from '../../eslint-rules/layers.js';

const repo = path.resolve(new URL('../..', import.meta.url).pathname);
const copies: string[] = [];
afterEach(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of src/ to plant Node-only code in, the repository left as it is. */
function copyOfSrc(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'callwire-browser-'));
  copies.push(dir);
  cpSync(path.join(repo, 'src'), path.join(dir, 'src'), { recursive: true });
  return dir;
}

function edit(dir: string, file: string, change: (text: string) => string): void {
  const at = path.join(dir, file);
  writeFileSync(at, change(readFileSync(at, 'utf8')));
}

/** The layer rule's complaints about what the browser entry points reach, linted in `cwd`. */
async function browserErrors(cwd: string): Promise<{ file: string; message: string }[]> {
  const eslint = new ESLint({
    cwd,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser, globals: { process: 'readonly', Buffer: 'readonly' } },
        plugins: { callwire: { rules: { layers } } },
        rules: { 'callwire/layers': 'error' },
      },
    ],
  });
  const reached = [...browserReach(cwd, browserEntries).keys()];
  const results = await eslint.lintFiles(reached);
  return results.flatMap((r) => r.messages.map((m) => ({ file: path.relative(cwd, r.filePath), message: m.message })));
}

describe('the browser bundle, as the layer rule follows its imports', () => {
  it('reaches the client and the Lab, and leaves the Node client and the Deno spawner out', () => {
    const reached = [...browserReach(repo, browserEntries).keys()].map((f) => path.relative(repo, f));
    expect(reached).toEqual(expect.arrayContaining(['src/lab/main.ts', 'src/client/index.ts', 'src/client/connect.ts', 'src/flow/next-turn.ts']));
    expect(reached.filter((f) => f.startsWith('src/client-node/') || f.startsWith('src/webtransport/') || f.startsWith('src/io/'))).toEqual([]);
  });

  it('passes on the real tree', async () => {
    expect(await browserErrors(repo)).toEqual([]);
  });

  it('fails when the client imports the WebTransport layer for a value: its index re-exports the Deno spawner', async () => {
    const dir = copyOfSrc();
    edit(dir, 'src/client/connect.ts', (text) => `${text}\nexport { HTTP3_HEAD_START_MS } from '../webtransport/index.js';\n`);
    const errors = await browserErrors(dir);
    const deno = errors.filter((e) => e.file === 'src/webtransport/deno.ts');
    expect(deno.length).toBeGreaterThan(0);
    expect(deno[0]!.message).toContain('src/client/connect.ts → src/webtransport/index.ts → src/webtransport/deno.ts');
  });

  it('fails on a Node-only global in a file outside src/ that the Lab reaches', async () => {
    const dir = copyOfSrc();
    mkdirSync(path.join(dir, 'lib'));
    writeFileSync(path.join(dir, 'lib/later.ts'), 'export const later = (f: () => void): void => void setImmediate(f);\n');
    edit(dir, 'src/lab/run.ts', (text) => `import { later } from '../../lib/later.js';\nlater(() => undefined);\n${text}`);
    const errors = await browserErrors(dir);
    expect(errors.map((e) => e.file)).toContain('lib/later.ts');
    expect(errors.find((e) => e.file === 'lib/later.ts')!.message).toMatch(/src\/lab\/main\.ts → src\/lab\/run\.ts → lib\/later\.ts.*'setImmediate'/);
  });

  it('follows a dynamic import to a Node-only package', async () => {
    const dir = copyOfSrc();
    writeFileSync(path.join(dir, 'src/webtransport/sockets.ts'), "export const sockets = async () => (await import('ws')).WebSocket;\n");
    edit(dir, 'src/client/exec.ts', (text) => `${text}\nexport const sockets = () => import('../webtransport/sockets.js');\n`);
    const errors = await browserErrors(dir);
    expect(errors.find((e) => e.file === 'src/webtransport/sockets.ts')?.message).toMatch(/Node's 'ws'/);
  });

  it('does not follow an import of types only, which the compiler erases', async () => {
    const dir = copyOfSrc();
    mkdirSync(path.join(dir, 'lib'));
    writeFileSync(path.join(dir, 'lib/node-types.ts'), "import { Buffer } from 'node:buffer';\nexport type Bytes = Buffer;\nexport const bytes = Buffer.alloc(0);\n");
    edit(dir, 'src/lab/run.ts', (text) => `import type { Bytes } from '../../lib/node-types.js';\nexport type RunBytes = Bytes;\n${text}`);
    expect(await browserErrors(dir)).toEqual([]);
  });
});
