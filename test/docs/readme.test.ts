import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO, demoContainer } from '../../scripts/demo-container.mjs';
import { consoleSteps, lineMatches, runSession } from '../support/console-session.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { fencedBlocks, headingAnchors, links } from '../support/markdown.js';
import { ServedCli } from '../support/served.js';
import { sleep, until } from '../support/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const README = join(ROOT, 'README.md');
const readme = (): string => readFileSync(README, 'utf8');
const markdownIn = (dir: string): string[] => readdirSync(join(ROOT, dir)).filter((name) => name.endsWith('.md')).map((name) => join(ROOT, dir, name));
/** The README and every page it leads to: docs/, the bench's reports, the changelog. */
const docs = (): string[] => [README, join(ROOT, 'CHANGELOG.md'), ...markdownIn('docs'), ...markdownIn('bench')];

/**
 * The README is the front door (issue 22): every link in it and in docs/ leads to a file
 * that exists and, with an #anchor, to a heading there; and its examples run as shown,
 * against the real CLI, a real server and the real Docker engine. Its blocks say how they
 * are checked by their language: `console` blocks run as a shell session (output as
 * shown, `…` for any text), `ts` blocks run with tsx and print what their `// prints:`
 * comments say, and `sh` blocks (installing, the full suite, an interactive shell) run
 * npm scripts that must exist.
 */
describe('README links', () => {
  for (const file of docs()) {
    it(`every relative link in ${relative(ROOT, file)} leads to a file, and every #anchor to a heading in it`, () => {
      const broken: string[] = [];
      for (const { target, line } of links(readFileSync(file, 'utf8'))) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(destination)) {
          broken.push(`${relative(ROOT, file)}:${line}: ${target}: no such file`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
          broken.push(`${relative(ROOT, file)}:${line}: ${target}: an anchor into something that is not Markdown`);
        } else if (!headingAnchors(readFileSync(destination, 'utf8')).has(anchor)) {
          broken.push(`${relative(ROOT, file)}:${line}: ${target}: no heading makes #${anchor}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});

describe('citations of doc sections', () => {
  // The sections moved out of the README (issue 22); a citation that was not moved with them names nothing.
  it('every citation of a section (a Markdown file, then the section in double quotes) in the code and docs names a heading of that file', () => {
    const stale: string[] = [];
    const sources = ['src', 'edge', 'bench', 'scripts', 'test', 'eslint-rules', 'docs'].flatMap((dir) => filesUnder(join(ROOT, dir)));
    for (const file of [...sources, README, join(ROOT, 'CHANGELOG.md')]) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, index) => {
          for (const match of text.matchAll(/\b(README|(?:docs|bench|spec)\/[\w/-]+\.md)`?,? "([^"]+)"/g)) {
            const cited = match[1] === 'README' ? README : join(ROOT, match[1]!);
            const section = match[2]!.toLowerCase();
            const headings = existsSync(cited) ? [...readFileSync(cited, 'utf8').matchAll(/^#{1,6}\s+(.*)$/gm)].map((h) => h[1]!.replaceAll('`', '').toLowerCase()) : [];
            if (!headings.some((heading) => heading.includes(section))) stale.push(`${relative(ROOT, file)}:${index + 1}: ${match[0]}`);
          }
        });
    }
    expect(stale).toEqual([]);
  });
});

describe('README shape', () => {
  it('stays a front door: about 200 lines at most, every code block says its language, and its sh blocks run npm scripts that exist', () => {
    const text = readme();
    expect(text.split('\n').length).toBeLessThanOrEqual(200);
    const blocks = fencedBlocks(text);
    expect(blocks.filter((block) => block.lang === '').map((block) => block.line)).toEqual([]);
    expect(blocks.filter((block) => !['console', 'ts', 'sh'].includes(block.lang)).map((block) => `${block.line}: ${block.lang}`)).toEqual([]);
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const npmRuns = blocks.filter((block) => block.lang === 'sh').flatMap((block) => [...block.body.matchAll(/\bnpm (?:run )?([\w:-]+)/g)].map((m) => m[1]!));
    expect(npmRuns.length).toBeGreaterThan(0);
    for (const name of npmRuns.filter((name) => name !== 'install')) expect(Object.keys(scripts)).toContain(name);
  });
});

describe('README examples, run', () => {
  const docker = new DockerFixture();
  const served = new ServedCli();
  // A demo container of this test's own (made as npm start makes callwire-demo), so it
  // neither disturbs nor depends on a callwire-demo another test or a developer has.
  const demo = `${DEMO}-readme-${randomUUID().slice(0, 8)}`;
  const scratch = join(ROOT, 'test-artifacts', `readme-${randomUUID().slice(0, 8)}`);
  /** The README's text as run here: our container, and our server's port for the default one. */
  const localize = (text: string): string =>
    text.replaceAll(DEMO, demo).replace(/\b(localhost|127\.0\.0\.1):7070\b/g, () => new URL(served.base).host);
  const env = (): NodeJS.ProcessEnv => {
    const { CALLWIRE_TOKEN: _token, ...rest } = process.env;
    return { ...rest, CALLWIRE_URL: served.wsUrl, DOCKER_HOST: dockerHost };
  };

  beforeAll(async () => {
    expect(await demoContainer(docker.engine.docker, demo)).toMatch(/created from/);
    await served.start(dockerHost);
    mkdirSync(scratch, { recursive: true });
  });
  afterAll(async () => {
    await served.stop();
    await docker.engine.docker.getContainer(demo).remove({ force: true }).catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
  });

  it('the console blocks print what the README shows, command by command', async () => {
    const blocks = fencedBlocks(readme()).filter((block) => block.lang === 'console');
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      const steps = consoleSteps(localize(block.body));
      expect(steps.length).toBeGreaterThan(0);
      const session = await runSession(steps, { cwd: ROOT, env: env(), timeoutMs: 40_000 });
      steps.forEach((step, i) => {
        const actual = session.outputs[i] ?? [];
        const shown = `README line ${block.line + step.line}: $ ${step.command}\nexpected:\n${step.expected.join('\n')}\nprinted:\n${actual.join('\n')}`;
        expect(actual.length, shown).toBe(step.expected.length);
        step.expected.forEach((line, j) => expect(lineMatches(line, actual[j]!), shown).toBe(true));
      });
    }
  }, 60_000);

  it('the ts blocks type-check, run with tsx, print what their comments say and exit 0 by themselves, the server one too', async () => {
    const blocks = fencedBlocks(readme()).filter((block) => block.lang === 'ts');
    expect(blocks.length).toBeGreaterThan(0);
    // Inside the clone, as the README says, so `callwire` and `zod` resolve as for a reader.
    const files = blocks.map((block) => {
      const file = join(scratch, `snippet-${block.line}.ts`);
      writeFileSync(file, `${localize(block.body)}\nexport {};\n`);
      return file;
    });
    // A reader's strict project, not this repository's stricter one.
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'], skipLibCheck: true, noEmit: true }, include: ['*.ts'] }));
    const typecheck = await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', scratch], { cwd: ROOT }).catch((error: { stdout: string }) => error);
    expect('stdout' in typecheck ? typecheck.stdout : '').toBe('');

    for (const [index, block] of blocks.entries()) {
      const expected = [...block.body.matchAll(/\/\/ prints: (.*)$/gm)].map((m) => localize(m[1]!.trim()));
      expect(expected.length, `README line ${block.line}: a ts block says what it prints`).toBeGreaterThan(0);
      const snippet = runTsx(files[index]!, env());
      try {
        // Until it has printed everything, or has ended without doing so.
        await until(() => snippet.ended() || printedInOrder(expected, snippet.stdout()), 'the snippet', 30_000).catch(() => undefined);
        const shown = `README ts block at line ${block.line}, expected in order:\n${expected.join('\n')}\nprinted:\n${snippet.stdout()}${snippet.stderr()}`;
        expect(printedInOrder(expected, snippet.stdout()), shown).toBe(true);
        if (/startServer\(/.test(block.body)) {
          // Beside a running `npm start`: none of its ports (issue 22).
          const ports = [...snippet.stdout().matchAll(/:\/\/127\.0\.0\.1:(\d+)\//g)].map((m) => Number(m[1]));
          expect(ports).toHaveLength(2);
          for (const port of ports) expect([7070, 7071]).not.toContain(port);
        }
        // Every snippet ends by itself, a server's too: a reader's program that hangs is a defect.
        expect(await Promise.race([snippet.exited, sleep(30_000).then(() => 'still running after 30 s')]), shown).toBe(0);
      } finally {
        snippet.kill();
      }
    }
  }, 90_000);
});

/** Every source and Markdown file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(path);
    return /\.(ts|mts|mjs|js|md)$/.test(entry.name) ? [path] : [];
  });
}

/** Whether every expected line appears, in order, among the printed lines. */
function printedInOrder(expected: readonly string[], printed: string): boolean {
  const lines = printed.split('\n');
  let at = 0;
  for (const line of expected) {
    while (at < lines.length && !lineMatches(line, lines[at]!)) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
}

/**
 * `npx tsx file`, as the README runs a snippet, in a process group of its own: npx, tsx
 * and the node under them (a server, for one snippet) all end with it.
 */
function runTsx(file: string, env: NodeJS.ProcessEnv): { stdout: () => string; stderr: () => string; ended: () => boolean; exited: Promise<number | null>; kill: () => void } {
  const child = spawn('npx', ['tsx', file], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let ended = false;
  const exited = new Promise<number | null>((done) =>
    child.on('exit', (code) => {
      ended = true;
      done(code);
    }),
  );
  const kill = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  return { stdout: () => stdout, stderr: () => stderr, ended: () => ended, exited, kill };
}
