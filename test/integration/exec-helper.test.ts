import { Observable } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exec } from '../../src/client/index.js';
import { defineOperation } from '../../src/server/index.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';

// A stand-in exec whose stream shape each test picks: the client helper must trust only `terminal: true`.
let script: unknown[] = [];
const fakeExec = defineOperation({
  name: 'docker/container/exec',
  kind: 'subscription',
  input: z.object({ containerId: z.string() }).loose(),
  output: z.unknown(),
  handler: () =>
    new Observable((subscriber) => {
      for (const item of script) subscriber.next(item);
      subscriber.complete();
    }),
});

describe('the exec helper (client)', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ webTransportPort: false, operations: [fakeExec] }).then(() => undefined));
  afterAll(() => fx.stop());

  it('resolves the exit code from the terminal frame, after every output frame', async () => {
    script = [{ stream: 'stdout', text: 'a' }, { stream: 'stderr', text: 'b' }, { exitCode: 7, terminal: true, stdoutBytes: 1, stderrBytes: 1 }];
    const client = await fx.client(transportCases[0]!);
    const handle = exec(client, 'c', ['x']);
    const seen: unknown[] = [];
    handle.output.subscribe((f) => seen.push(f));
    expect(await handle.result).toEqual({ exitCode: 7, stdoutBytes: 1, stderrBytes: 1 });
    expect(seen).toEqual(script.slice(0, 2));
  });

  it('a stream that ends without a terminal frame rejects: never a silent exit 0', async () => {
    script = [{ stream: 'stdout', text: 'a' }, { exitCode: 0 }];
    const client = await fx.client(transportCases[0]!);
    await expect(exec(client, 'c', ['x']).result).rejects.toThrow(/without a terminal frame/);
  });

  it('keeps output that arrives before anyone subscribes', async () => {
    script = [{ stream: 'stdout', text: 'early' }, { exitCode: 0, terminal: true, stdoutBytes: 5, stderrBytes: 0 }];
    const client = await fx.client(transportCases[0]!);
    const handle = exec(client, 'c', ['x']);
    await handle.result;
    const seen: unknown[] = [];
    handle.output.subscribe((f) => seen.push(f));
    expect(seen).toEqual([{ stream: 'stdout', text: 'early' }]);
  });
});
