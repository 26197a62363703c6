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
});
