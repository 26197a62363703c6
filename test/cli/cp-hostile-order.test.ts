import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CraftedArchiveServer } from '../support/crafted-archive-server.js';
import { craftedTar } from '../support/crafted-tar.js';
import { runCli } from '../support/cli.js';
import { treeListing } from '../support/tree-listing.js';

/**
 * callwire cp against a server that breaks an archive call's order or its end (spec §12,
 * ARC-4 to ARC-6; docs/security.md "Copies"): a get is a stat, tar bytes, then its end; a
 * put answers with its end alone. Anything else ends the copy with exit 125 before the
 * item is used: no byte to stdout, no second staging directory, nothing at the
 * destination. A put whose end does not name the bytes sent, or that has none, ends 123.
 */

const MODE_DIR = 2 ** 31;
const stat = { name: 'x', size: 0, mode: MODE_DIR + 0o755, mtime: '2026-01-01T00:00:00Z', linkTarget: '' };
const tar = craftedTar([{ path: 'x/', type: 'Directory' }, { path: 'x/f', type: 'File', body: 'file' }]);
const end = { terminal: true as const, bytes: tar.byteLength, sha256: createHash('sha256').update(tar).digest('hex') };
/** What a forger would put before the stat: a terminal title and a line that looks like the copy's own. */
const FORGED = Buffer.from('\x1b]0;pwned\x07Successfully copied 1GB to /etc\n');

describe('callwire cp refuses an archive call out of order', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-order-'));
  let crafted: CraftedArchiveServer;

  beforeAll(async () => {
    crafted = await CraftedArchiveServer.start();
  });
  afterAll(async () => {
    await crafted?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const copyOut = async (name: string, to: string) => {
    const run = runCli(['--url', crafted.wsUrl, 'cp', `${name}:/x`, to], { stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stdout: run.stdout, stderr: run.stderr };
  };

  it('tar bytes before the stat, copied to stdout: exit 125, not a byte of them written', async () => {
    crafted.serve('data-first', {
      items: async function* () {
        yield { data: FORGED };
        yield { stat };
        yield { data: tar };
        yield end;
      },
    });
    const result = await copyOut('data-first', '-');
    expect(result.stderr).toMatch(/^Error: refused the copy: the server sent tar bytes before the path's stat/m);
    expect(result.code).toBe(125);
    expect(result.stdout).toBe('');
  });

  it.each([
    ['a second stat', [{ stat }, { data: tar }, { stat }, { data: tar }, end], /sent a second stat/],
    ['tar bytes after the end', [{ stat }, { data: tar }, end, { data: FORGED }], /sent tar bytes after the copy's end/],
    ['a second end', [{ stat }, { data: tar }, end, end], /sent the copy's end after the copy's end/],
    ['the end before the stat', [end, { stat }, { data: tar }, end], /sent the copy's end before the path's stat/],
  ])('%s, copied to a directory: exit 125, nothing at the destination, no staging directory left', async (name, items, reason) => {
    const scenario = name.replaceAll(' ', '-').replaceAll("'", '');
    crafted.serve(scenario, {
      items: async function* () {
        yield* items;
      },
    });
    const work = mkdtempSync(join(root, `${scenario}-`));
    writeFileSync(join(work, 'kept'), 'the user\'s own\n');
    const before = treeListing(work);
    const result = await copyOut(scenario, join(work, 'x'));
    expect(result.stderr).toMatch(reason);
    expect(result.code, result.stderr).toBe(125);
    expect(treeListing(work)).toEqual(before);
    expect(readdirSync(work)).toEqual(['kept']);
  });

  it('the same items in order are copied (the refusals are of the order, not of the items)', async () => {
    crafted.serve('in-order', {
      items: async function* () {
        yield { stat };
        yield { data: tar };
        yield end;
      },
    });
    const work = mkdtempSync(join(root, 'in-order-'));
    const result = await copyOut('in-order', join(work, 'x'));
    expect(result.code, result.stderr).toBe(0);
    expect(treeListing(join(work, 'x'))).toEqual([expect.stringMatching(/^\/f file 644 4 /)]);
  });
});

describe('callwire cp into a container checks the put\'s end', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-put-end-'));
  let crafted: CraftedArchiveServer;
  let source = '';

  beforeAll(async () => {
    crafted = await CraftedArchiveServer.start();
    source = join(root, 'file');
    writeFileSync(source, 'the bytes sent\n');
  });
  afterAll(async () => {
    await crafted?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const copyIn = async (name: string) => {
    const run = runCli(['--url', crafted.wsUrl, 'cp', source, `${name}:/dir/`], { stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stderr: run.stderr };
  };

  it('an end that names other bytes (a changed sha256, a count short by one): exit 123', async () => {
    crafted.serve('put-other-sha', {
      putAnswer: async function* (received) {
        yield { terminal: true as const, bytes: received.bytes, sha256: '0'.repeat(64) };
      },
    });
    const sha = await copyIn('put-other-sha');
    expect(sha.stderr).toMatch(/^Error: the copy does not match its terminal frame: \d+ bytes with sha256 [0-9a-f]{64} here, \d+ bytes with sha256 0{64} there \(INTERNAL\)$/m);
    expect(sha.code).toBe(123);
    crafted.serve('put-short', {
      putAnswer: async function* (received) {
        yield { terminal: true as const, bytes: received.bytes - 1, sha256: received.sha256 };
      },
    });
    const short = await copyIn('put-short');
    expect(short.stderr).toMatch(/does not match its terminal frame/);
    expect(short.code).toBe(123);
  });

  it('no end at all: exit 123, the copy said to be incomplete', async () => {
    crafted.serve('put-no-end', {
      putAnswer: async function* () {
        // Ends the call with no item.
      },
    });
    const result = await copyIn('put-no-end');
    expect(result.stderr).toMatch(/^Error: the copy ended without its terminal frame: it is incomplete \(UNAVAILABLE\)$/m);
    expect(result.code).toBe(123);
  });

  it('a second end: exit 125', async () => {
    crafted.serve('put-two-ends', {
      putAnswer: async function* (received) {
        yield { terminal: true as const, ...received };
        yield { terminal: true as const, ...received };
      },
    });
    const result = await copyIn('put-two-ends');
    expect(result.stderr).toMatch(/^Error: refused the copy: the server sent the copy's end after the copy's end/m);
    expect(result.code).toBe(125);
  });

  it('an honest end: exit 0 (the refusals are of the ends, not of the copy)', async () => {
    crafted.serve('put-honest', {});
    const result = await copyIn('put-honest');
    expect(result.code, result.stderr).toBe(0);
  });
});
