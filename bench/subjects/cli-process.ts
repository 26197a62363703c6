/**
 * A whole CLI process per exec, its output to /dev/null as `… > /dev/null` in a shell:
 * the docker CLI, or callwire's. Both start a process per call, so a round trip counts
 * the process's start.
 */
import { spawn } from 'node:child_process';
import { DOCKER } from '../names.js';
import type { Subject } from '../subject.js';

export const DOCKER_CLI = '/usr/bin/docker';

/** Runs `argv` to its end, its output thrown away (so its bytes are not known here). */
const runProcess = (argv: readonly string[]): Promise<undefined> =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'ignore'] });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(undefined) : reject(new Error(`${argv.join(' ')} exited ${code}`))));
  });

export const dockerCliSubject = (): Subject => ({
  name: DOCKER,
  peers: [],
  exec: (container, argv) => runProcess([DOCKER_CLI, 'exec', container, ...argv]),
  ttyCommand: (container, command) => `${DOCKER_CLI} exec -it ${container} ${command}`,
  close: async () => undefined,
});

/** `main`: the build's CLI (Build.cli). */
export function callwireCliSubject(name: string, main: string, wsUrl: string, peers: readonly string[]): Subject {
  return {
    name,
    peers,
    exec: (container, argv) => runProcess([process.execPath, main, '--url', wsUrl, 'exec', container, '--', ...argv]),
    ttyCommand: (container, command) => `'${process.execPath}' ${main} --url ${wsUrl} exec -it ${container} -- ${command}`,
    close: async () => undefined,
  };
}
