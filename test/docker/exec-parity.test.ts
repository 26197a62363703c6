import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exec, type Client, type ExecOutput } from '../../src/client/index.js';
import { dockerCli } from '../support/docker.js';
import { useExecServer } from '../support/exec-server.js';

interface Case {
  name: string;
  cmd: string[];
  env?: string[];
  workingDir?: string;
  user?: string;
  stdin?: Uint8Array;
}

const busybox = readFileSync('/bin/busybox');
const cases: Case[] = [
  { name: 'stdout only', cmd: ['echo', 'hello world'] },
  { name: 'stderr only', cmd: ['sh', '-c', 'echo oops >&2'] },
  { name: 'interleaved stdout and stderr', cmd: ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done'] },
  { name: 'empty output', cmd: ['true'] },
  { name: 'exit 1', cmd: ['false'] },
  { name: 'exit 3 with output on both streams', cmd: ['sh', '-c', 'echo out; echo err >&2; exit 3'] },
  { name: 'exit 126 (not executable)', cmd: ['/etc/passwd'] },
  { name: 'exit 126 (sh)', cmd: ['sh', '-c', 'exit 126'] },
  { name: 'exit 127 (command not found)', cmd: ['sh', '-c', 'no-such-command'] },
  { name: 'exit 255', cmd: ['sh', '-c', 'exit 255'] },
  { name: 'killed by a signal', cmd: ['sh', '-c', 'echo before; kill -9 $$'] },
  { name: 'multi-byte UTF-8 across chunk boundaries', cmd: ['sh', '-c', 'i=0; while [ $i -lt 30000 ]; do printf "é😀✓"; i=$((i+1)); done'] },
  { name: 'binary output', cmd: ['cat', '/bin/busybox'] },
  { name: 'stdin piped to wc -c', cmd: ['wc', '-c'], stdin: new TextEncoder().encode('abc') },
  { name: 'binary stdin round trip', cmd: ['cat'], stdin: busybox.subarray(0, 300_000) },
  { name: '100 MB of output', cmd: ['sh', '-c', 'yes callwire-0123456789abcdef | head -c 100000000'] },
  { name: '1 MB on stderr', cmd: ['sh', '-c', 'yes err | head -c 1000000 >&2'] },
  { name: 'no trailing newline', cmd: ['printf', 'abc'] },
  { name: 'output over time', cmd: ['sh', '-c', 'for i in 1 2 3; do echo tick$i; sleep 0.05; done'] },
  { name: 'environment', cmd: ['sh', '-c', 'echo "$GREETING $TARGET"'], env: ['GREETING=hello', 'TARGET=wörld'] },
  { name: 'working directory', cmd: ['pwd'], workingDir: '/tmp' },
  { name: 'user', cmd: ['id', '-u'], user: 'nobody' },
  { name: 'command line with spaces and quotes', cmd: ['sh', '-c', 'printf "%s|" "$@"', 'sh', 'a b', '"q"', ''] },
];

async function viaCallwire(client: Client, containerId: string, c: Case, encoding: 'utf8' | 'binary') {
  const handle = exec(client, containerId, c.cmd, {
    encoding,
    ...(c.env ? { env: c.env } : {}),
    ...(c.workingDir ? { workingDir: c.workingDir } : {}),
    ...(c.user ? { user: c.user } : {}),
    ...(c.stdin ? { stdin: c.stdin } : {}),
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let text = { stdout: '', stderr: '' };
  const done = new Promise<void>((resolve, reject) =>
    handle.output.subscribe({
      next: (frame: ExecOutput) => {
        if ('data' in frame) (frame.stream === 'stdout' ? out : err).push(Buffer.from(frame.data));
        else text = { ...text, [frame.stream]: text[frame.stream] + frame.text };
      },
      complete: resolve,
      error: reject,
    }),
  );
  const result = await handle.result;
  await done;
  return { result, stdout: Buffer.concat(out), stderr: Buffer.concat(err), text };
}

function dockerArgs(containerId: string, c: Case): string[] {
  return [
    'exec',
    ...(c.stdin ? ['-i'] : []),
    ...(c.env ?? []).flatMap((e) => ['-e', e]),
    ...(c.workingDir ? ['-w', c.workingDir] : []),
    ...(c.user ? ['-u', c.user] : []),
    containerId,
    ...c.cmd,
  ];
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('docker/container/exec gives what docker exec gives (bytes and exit code)', () => {
  const { containerId: container, client: connected } = useExecServer();

  for (const c of cases) {
    it(c.name, async () => {
      const expected = await dockerCli(dockerArgs(container(), c), c.stdin);
      const binary = await viaCallwire(connected(), container(), c, 'binary');
      expect(binary.result.exitCode).toBe(expected.code);
      expect(binary.stdout.byteLength).toBe(expected.stdout.byteLength);
      expect(sha(binary.stdout)).toBe(sha(expected.stdout));
      expect(binary.stderr.byteLength).toBe(expected.stderr.byteLength);
      expect(sha(binary.stderr)).toBe(sha(expected.stderr));
      expect(binary.result.stdoutBytes).toBe(binary.stdout.byteLength);
      expect(binary.result.stderrBytes).toBe(binary.stderr.byteLength);
      if (expected.stdout.byteLength < 5_000_000) {
        const text = await viaCallwire(connected(), container(), c, 'utf8');
        expect(text.result.exitCode).toBe(expected.code);
        expect(text.text.stdout).toBe(new TextDecoder().decode(expected.stdout));
        expect(text.text.stderr).toBe(new TextDecoder().decode(expected.stderr));
      }
    }, 120_000);
  }

  it('decodes multi-byte characters split across engine chunks without replacement characters', async () => {
    const c = cases.find((x) => x.name.startsWith('multi-byte'))!;
    const { text } = await viaCallwire(connected(), container(), c, 'utf8');
    expect(text.stdout).not.toContain('\uFFFD');
    expect(text.stdout).toBe('é😀✓'.repeat(30000));
  }, 60_000);
});
