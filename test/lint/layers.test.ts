import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: new URL('../..', import.meta.url).pathname });

async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'callwire/layers').map((m) => m.message);
}

describe('layer rule', () => {
  it('forbids src/protocol from importing anything of ours', async () => {
    expect(await layerErrors('src/protocol/x.ts', "export { a } from '../dispatcher/index.js';\n")).toHaveLength(1);
  });

  it('lets the dispatcher import the protocol entry point only', async () => {
    expect(await layerErrors('src/dispatcher/x.ts', "export { limits } from '../protocol/index.js';\n")).toEqual([]);
    const deep = await layerErrors('src/dispatcher/x.ts', "export { limits } from '../protocol/limits.js';\n");
    expect(deep[0]).toMatch(/public entry point/);
  });

  it('forbids the dispatcher from importing a transport', async () => {
    expect(await layerErrors('src/dispatcher/x.ts', "export { a } from '../transports/index.js';\n")).toHaveLength(1);
  });

  it('forbids operations from importing the server', async () => {
    expect(await layerErrors('src/operations/docker/x.ts', "export { a } from '../../server/index.js';\n")).toHaveLength(1);
  });

  it('lets the client, the transports and the conformance peer share the WebTransport layer, which imports only the protocol', async () => {
    for (const from of ['src/client/x.ts', 'src/transports/x.ts', 'src/conformance/x.ts']) {
      expect(await layerErrors(from, "export { openWebTransport } from '../webtransport/index.js';\n")).toEqual([]);
    }
    expect(await layerErrors('src/webtransport/x.ts', "export { a } from '../dispatcher/index.js';\n")).toHaveLength(1);
    expect(await layerErrors('src/operations/x.ts', "export { a } from '../webtransport/index.js';\n")).toHaveLength(1);
  });

  it('lets the server transports and the Node client share the Node-side io layer, which imports only the protocol', async () => {
    for (const from of ['src/transports/x.ts', 'src/client-node/x.ts']) {
      expect(await layerErrors(from, "export { writeBatcher } from '../io/index.js';\n")).toEqual([]);
    }
    expect(await layerErrors('src/io/x.ts', "export { limits } from '../protocol/index.js';\n")).toEqual([]);
    expect(await layerErrors('src/io/x.ts', "export { a } from '../dispatcher/index.js';\n")).toHaveLength(1);
    expect(await layerErrors('src/protocol/x.ts', "export { writeBatcher } from '../io/index.js';\n")).toHaveLength(1);
  });

  it('keeps Node modules and Node-only globals out of the layers browsers load, and allows them in io', async () => {
    const nodeOnly = [
      "export const later = (f: () => void) => setImmediate(f);\n",
      "export const bytes = Buffer.from('x');\n",
      "export const env = process.env;\n",
      "import { connect } from 'node:net';\nexport const c = connect;\n",
      "import { connect } from 'net';\nexport const c = connect;\n",
      "export const fs = () => import('node:fs');\n",
    ];
    for (const from of ['src/protocol/x.ts', 'src/contracts/x.ts', 'src/outcome/x.ts', 'src/lab/x.ts']) {
      for (const code of nodeOnly) expect(await layerErrors(from, code), `${from}: ${code}`).toHaveLength(1);
    }
    for (const code of nodeOnly) expect(await layerErrors('src/io/x.ts', code)).toEqual([]);
    // Browsers have these, and a type names no runtime value.
    expect(await layerErrors('src/protocol/x.ts', 'export const t = (f: () => void) => setTimeout(f, 1);\nexport type B = Buffer;\n')).toEqual([]);
    expect(await layerErrors('src/protocol/x.ts', 'export function f() {\n  const process = 1;\n  return process;\n}\n')).toEqual([]);
  });
});
