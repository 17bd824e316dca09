// Lint: typescript-eslint's type-checked recommended rules (promises handled,
// no unsafe any), nothing stylistic — Prettier owns the layout.
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * The layer table of docs/architecture.md as a rule: each folder under src/
 * names the layers it may not import (ESLint core no-restricted-imports, one
 * `files` block per layer; no plugin needed). Patterns match the import
 * specifier, e.g. `../../platform/gitlab/job.js`.
 */
const LAYERS = ['app', 'adapters', 'ledger', 'platform', 'cli', 'actions'];
/** A layer name forbids the whole folder; a list of globs (with `!` exceptions) forbids part of one. */
const forbidden = (layers, why) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: layers.map((layer) => ({
        group: Array.isArray(layer) ? layer : [`**/${layer}/**`],
        message: `${why} (docs/architecture.md, "Layers")`,
      })),
    },
  ],
});
const boundaries = [
  ['src/domain/**', LAYERS, 'the domain is pure: no I/O, no other layer'],
  [
    'src/adapters/**',
    ['app', 'ledger', 'platform', 'cli', 'actions'],
    'an adapter wraps one external tool and knows only the domain',
  ],
  [
    'src/ledger/**',
    ['app', 'platform', 'cli', 'actions', ['**/adapters/**', '!**/adapters/git.js', '!**/adapters/process.js']],
    'the ledger knows the domain and the git adapter only',
  ],
  ['src/app/**', ['platform', 'cli', 'actions'], 'the core is platform-neutral: a face supplies its ports'],
  ['src/platform/**', ['cli', 'actions'], 'a CI face is reached from its entry points, never the other way'],
  ['src/cli/**', ['actions'], 'the CLI is an entry point of its own: it wires adapters, never the actions'],
  ['src/actions/**', ['cli', 'ledger', 'adapters'], 'an entry point parses inputs, calls one use case, renders'],
].map(([files, layers, why]) => ({ files: [files], rules: forbidden(layers, why) }));

export default defineConfig(
  { ignores: ['dist/**', 'dist.building-*/**', 'node_modules/**', '.exocomp/**', 'coverage/**'] },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Port implementations are async to honour a Promise-returning interface, with or without an await inside.
      '@typescript-eslint/require-await': 'off',
      // Our interfaces' methods are closures over their state, never bound to `this`: passing one along is safe.
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  ...boundaries,
  {
    // Tests read JSON a command or a double printed; zod checks those shapes in the code under test, not in the test.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.mjs', '**/*.js', 'vitest.config.ts', 'vitest.fleet.config.ts'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
);
