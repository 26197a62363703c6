import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** What `npm pack` would publish, asked of npm itself. */
function packedFiles(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
  return (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
}

describe('the published package', () => {
  it('holds the Deno edge programs HTTP/3 runs (src/webtransport/deno.ts finds them beside dist/), and every file they import', () => {
    const files = packedFiles();
    const edge = readdirSync('edge').filter((name) => name.endsWith('.ts'));
    for (const name of edge) {
      expect(files).toContain(`edge/${name}`);
      for (const [, imported] of readFileSync(`edge/${name}`, 'utf8').matchAll(/from '\.\/([^']+)'/g)) expect(files).toContain(`edge/${imported}`);
    }
    expect(edge).toEqual(expect.arrayContaining(['quic-edge.ts', 'quic-client.ts']));
    expect(files).toContain('dist/cli/main.js');
  });
});
