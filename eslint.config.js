import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layers from './eslint-rules/layers.js';

export default tseslint.config(
  { ignores: ['dist/', 'build-check/', 'node_modules/', 'reports/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { callwire: { rules: { layers } } },
    languageOptions: { globals: { console: 'readonly', process: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
    rules: {
      'callwire/layers': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  // rxjs's package entry loads all of rxjs: its classes come from src/rx, file by file.
  {
    files: ['src/**'],
    ignores: ['src/rx/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [{ name: 'rxjs', message: "import rxjs's classes from src/rx, which loads only their files", allowTypeImports: true }] }] },
  },
  // Only the command line talks to a terminal.
  { files: ['src/cli/**', 'scripts/**', 'bench/**', 'test/**', 'eslint-rules/**'], rules: { 'no-console': 'off' } },
  // The HTTP/3 edge is a Deno program: it reports to the server on stdout.
  { files: ['edge/**'], languageOptions: { globals: { Deno: 'readonly' } }, rules: { 'no-console': 'off' } },
);
