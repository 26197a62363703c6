// Bundles the Lab (src/lab) for the browser with esbuild: dist/lab/bundle.js, its CSS,
// xterm.js's CSS and the page. No CDN at run time: the server serves these files.
import { copyFileSync, mkdirSync } from 'node:fs';
import { build } from 'esbuild';

const out = 'dist/lab';
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ['src/lab/main.ts'],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  outfile: `${out}/bundle.js`,
  // Nothing Node-only is external: the Lab loads the platform-free client (src/client),
  // and a Node module reaching the bundle fails this build as it fails the lint rule.
  logLevel: 'warning',
});
copyFileSync('src/lab/index.html', `${out}/index.html`);
copyFileSync('src/lab/lab.css', `${out}/lab.css`);
copyFileSync('node_modules/@xterm/xterm/css/xterm.css', `${out}/xterm.css`);
