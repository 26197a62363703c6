import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { execContract } from '../../src/contracts/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';
import { runCall, type RunView } from '../../src/lab/run.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { runCli } from '../support/cli.js';
import { parseResultRecord } from '../support/result-record-schema.js';

/**
 * An engine that is not Docker on Linux may report any 32-bit exit code (EXEC-2), and a
 * server may end an exec without its terminal frame. This stand-in exec does what its
 * command says: `exit <n>` ends with a terminal frame of code n, `vanish` without one.
 */
const standInExec = defineOperation({
  ...execContract,
  handler: (input) =>
    (async function* () {
      const out = 'out\n';
      yield input.encoding === 'binary' ? { stream: 'stdout' as const, data: new TextEncoder().encode(out) } : { stream: 'stdout' as const, text: out };
      if (input.cmd[0] === 'exit') yield { exitCode: Number(input.cmd[1]), terminal: true as const, stdoutBytes: out.length, stderrBytes: 0 };
    })(),
});

/** The fields an envelope says of the exec; its call id differs per run. */
function fieldsOf(envelope: Record<string, unknown>): Record<string, unknown> {
  const { call_id: _callId, ...rest } = envelope;
  const exec = rest['exec'] as Record<string, unknown>;
  const { stdout: _stdout, stderr: _stderr, ...counts } = exec;
  return { ...rest, exec: counts };
}

const cases = [
  { cmd: ['exit', '3'], outcome: 'operation_failure', exitCode: 3, commandCode: 3 },
  // A process exit status holds 8 bits: docker exec itself exits 300 & 0xff.
  { cmd: ['exit', '300'], outcome: 'operation_failure', exitCode: 44, commandCode: 300 },
  { cmd: ['exit', '-1'], outcome: 'operation_failure', exitCode: 255, commandCode: -1 },
  // A failed command never reads as a success, though its low byte is 0.
  { cmd: ['exit', '256'], outcome: 'operation_failure', exitCode: 1, commandCode: 256 },
  { cmd: ['exit', '0'], outcome: 'success', exitCode: 0, commandCode: 0 },
  // EXEC-4: no terminal frame, no exit code; never 0.
  { cmd: ['vanish'], outcome: 'infrastructure_failure', exitCode: 123, commandCode: null },
] as const;

describe('one exec, one envelope: the CLI, HTTP and the Lab agree (src/outcome/exec.ts)', () => {
  let server: RunningServer;
  let client: Client;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, docker: false, operations: [standInExec] });
    client = await connect(server.wsUrl);
  });
  afterAll(async () => {
    await client.close();
    await server.close();
  });

  const viaCli = async (cmd: readonly string[]): Promise<{ envelope: Record<string, unknown>; code: number | null; plainCode: number | null }> => {
    const json = runCli(['--url', server.wsUrl, '--json', 'exec', 'c', '--', ...cmd], { stdin: 'ignore' });
    const plain = runCli(['--url', server.wsUrl, 'exec', 'c', '--', ...cmd], { stdin: 'ignore' });
    const [{ code }, { code: plainCode }] = await Promise.all([json.exited, plain.exited]);
    return { envelope: parseResultRecord(json.stdout), code, plainCode };
  };

  const viaHttp = async (cmd: readonly string[]): Promise<Record<string, unknown>> => {
    const base = server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const response = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ containerId: 'c', cmd }) });
    const lines = (await response.text()).split('\n').filter((line) => line.length > 0);
    return parseResultRecord(lines.at(-1)!);
  };

  const viaLab = async (cmd: readonly string[]): Promise<Record<string, unknown>> => {
    const view: RunView = {
      value: () => undefined,
      tty: { cols: 80, rows: 24, write: () => undefined, onData: () => () => undefined, onResize: () => () => undefined },
    };
    const envelope = await runCall(client, 'docker/container/exec', 'subscription', { containerId: 'c', cmd: [...cmd] }, new AbortController().signal, view);
    return parseResultRecord(JSON.stringify(envelope));
  };

  for (const c of cases) {
    it(`${c.cmd.join(' ')}: the same outcome, exit_code ${c.exitCode}, exec.exit_code ${c.commandCode}; the CLI exits ${c.exitCode}`, async () => {
      const [cli, http, lab] = await Promise.all([viaCli(c.cmd), viaHttp(c.cmd), viaLab(c.cmd)]);
      expect(cli.envelope).toMatchObject({ command: 'exec', outcome: c.outcome, exit_code: c.exitCode, exec: { exit_code: c.commandCode } });
      expect(fieldsOf(http)).toEqual(fieldsOf(cli.envelope));
      expect(fieldsOf(lab)).toEqual(fieldsOf(cli.envelope));
      expect(cli.code).toBe(c.exitCode);
      expect(cli.plainCode).toBe(c.exitCode);
    });
  }
});
