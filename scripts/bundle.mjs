// Builds one bundle per entry point: dist/cli.js (with dist/cli-chunks/, the parts it loads on demand: an
// `import()` in the sources), dist/<action>/index.js (with dist/<action>/chunks/, likewise), and
// dist/<action>/<file>.js for any other
// src/actions/<action>/<file>.ts (a part its main.ts loads on demand).
// The @actions packages are ESM-only and some of their dependencies still call
// require(): the banner gives the ESM bundle a real `require`.
import { build } from 'esbuild';
import { readdirSync, existsSync, rmSync, mkdirSync, chmodSync, renameSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const finalRoot = resolve(process.argv[2] ?? join(root, 'dist'));
// Build beside the target and swap it in, so a concurrent reader never sees a half-empty dist/.
const outRoot = `${finalRoot}.building-${process.pid}`;

const banner = [
  "import { createRequire as __exocompCreateRequire } from 'node:module';",
  'const require = __exocompCreateRequire(import.meta.url);',
].join('\n');

const entries = [
  { in: join(root, 'src/cli/main.ts'), out: join(outRoot, 'cli.js'), shebang: true, chunks: 'cli-chunks' },
];
const actionsDir = join(root, 'src/actions');
if (existsSync(actionsDir)) {
  for (const name of readdirSync(actionsDir).sort()) {
    const main = join(actionsDir, name, 'main.ts');
    if (existsSync(main))
      entries.push({ in: main, out: join(outRoot, name, 'index.js'), shebang: false, chunks: 'chunks' });
    // Another file beside main.ts is a bundle of its own, which main loads on demand (`import('./<file>.js')`).
    for (const file of readdirSync(join(actionsDir, name))
      .filter((f) => f.endsWith('.ts') && f !== 'main.ts')
      .sort()) {
      entries.push({
        in: join(actionsDir, name, file),
        out: join(outRoot, name, file.replace(/\.ts$/, '.js')),
        shebang: false,
      });
    }
  }
}

/** An action entry's `import('./<file>.js')` loads the sibling bundle at run time (see above), so it is left out of this one. */
const siblingBundles = {
  name: 'sibling-bundles',
  setup(build) {
    build.onResolve({ filter: /^\.\/[^/]+\.js$/ }, (args) =>
      args.kind === 'dynamic-import' && args.importer.startsWith(actionsDir)
        ? { path: args.path, external: true }
        : undefined,
    );
  },
};

/**
 * zod's namespace (`z.locales`) carries every locale's messages, 290 KiB the
 * bundle would parse on each start though only English is ever used: its
 * locale index resolves to English alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
        ? { path: join(args.resolveDir, '../locales/index.js'), namespace: 'zod-english-only' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: join(args.path, '..'),
    }));
  },
};

rmSync(outRoot, { recursive: true, force: true });
mkdirSync(outRoot, { recursive: true });
for (const entry of entries) {
  // Every entry starts a process: what only some runs need (@actions/cache, @actions/artifact, @gitbeaker/rest…)
  // stays in chunks, parsed when first imported (the provision action's start parses 1.6 MB instead of 3.9 MB).
  const output = entry.chunks
    ? {
        entryPoints: [{ in: entry.in, out: basename(entry.out, '.js') }],
        outdir: dirname(entry.out),
        splitting: true,
        chunkNames: `${entry.chunks}/[name]-[hash]`,
      }
    : { entryPoints: [entry.in], outfile: entry.out };
  await build({
    ...output,
    bundle: true,
    plugins: [siblingBundles, zodEnglishOnly],
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: (entry.shebang ? '#!/usr/bin/env node\n' : '') + banner },
    legalComments: 'none',
    // Worktrees link node_modules to the main checkout: keep module paths as they appear here, so every checkout bundles the same bytes.
    preserveSymlinks: true,
    logLevel: 'warning',
    // Keep bundles byte-stable across machines so the committed dist can be compared.
    sourcemap: false,
    minifySyntax: true,
    minifyWhitespace: true,
  });
  if (entry.shebang) chmodSync(entry.out, 0o755);
}
rmSync(finalRoot, { recursive: true, force: true });
renameSync(outRoot, finalRoot);
console.log(`bundled ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} into ${finalRoot}`);
