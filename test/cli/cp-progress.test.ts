import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { cpSource } from '../support/cp-container.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { Tmux } from '../support/tmux.js';

/**
 * callwire cp's progress on a real terminal (tmux) across a lost connection (issue 47
 * item 9): the progress line is cleared before "connection lost; reconnecting…" is
 * written, so the notice starts a line of its own instead of running on after the
 * progress text; the copy then resumes and ends with its last line.
 */

const CONTAINER = `cpc-progress-${process.pid}`;
const MiB = 1024 * 1024;

describe('callwire cp: progress and a lost connection on a terminal', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-progress-'));
  let source: Awaited<ReturnType<typeof cpSource>> | undefined;
  let proxy: TcpProxy | undefined;
  let term: Tmux | undefined;

  beforeAll(async () => {
    source = await cpSource(CONTAINER, `head -c ${64 * MiB} /dev/urandom > /big`);
    proxy = await new TcpProxy().start(Number(new URL(source.url).port));
  }, 60_000);
  afterAll(async () => {
    term?.kill();
    await proxy?.stop();
    await source?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('the notice of a lost connection starts its own line; the progress never runs into it', async () => {
    proxy!.cutAfterBytes(16 * MiB, 2000, 'down');
    term = new Tmux(200, 30);
    term.type(`'${process.execPath}' '${cliPath}' --url ${proxy!.via(source!.url)} cp ${CONTAINER}:/big ${join(root, 'big')}; echo "EXIT=$?"`);
    await term.waitFor(/^EXIT=\d+/m, 120_000);
    const lines = term.screen().split('\n');
    expect(proxy!.cuts, 'the relay was cut in the middle of the copy').toBe(1);
    expect(lines).toContain('EXIT=0');
    expect(lines.filter((line) => line.includes('callwire: connection lost'))).toEqual([expect.stringMatching(/^callwire: connection lost; reconnecting \(the call is kept for 30 s\)…$/)]);
    expect(lines.filter((line) => line.includes('Copying from container') && line.includes('callwire:'))).toEqual([]);
    expect(lines).toContainEqual(expect.stringMatching(/^Successfully copied 67\.1MB .*to \/tmp\//));
  }, 180_000);
});
