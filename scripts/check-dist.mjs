// Fails when the committed dist/ differs from a fresh bundle of the sources.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const fresh = mkdtempSync(join(tmpdir(), 'exocomp-dist-'));
execFileSync(process.execPath, [join(root, 'scripts/bundle.mjs'), fresh], { stdio: 'inherit' });

function files(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else out.push(path);
  }
  return out;
}
const committed = join(root, 'dist');
const a = new Set(files(committed).map((p) => relative(committed, p)));
const b = new Set(files(fresh).map((p) => relative(fresh, p)));
const problems = [];
for (const f of b) {
  if (!a.has(f)) problems.push(`missing from dist/: ${f}`);
  else if (!readFileSync(join(committed, f)).equals(readFileSync(join(fresh, f)))) problems.push(`stale: dist/${f}`);
}
for (const f of a) if (!b.has(f)) problems.push(`not produced by the sources: dist/${f}`);
rmSync(fresh, { recursive: true, force: true });
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error('dist/ does not match the sources: run `npm run bundle` and commit dist/.');
  process.exit(1);
}
console.log('dist/ matches the sources');
