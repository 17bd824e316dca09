/**
 * Issue 24: a file at a fixed path under /tmp is shared by every job on a
 * shell-executor runner (two jobs overwrite each other's plan). Files that
 * must not outlive a run live in private directories (src/adapters/private-dir.ts);
 * nothing in src/ or templates/ names a path below /tmp or below tmpdir().
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(repoRoot, dir), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(repoRoot, path.join(e.parentPath, e.name)));
}

/** A string literal starting with /tmp/, or a fixed name joined onto tmpdir(). */
const FIXED_TMP_PATH = /(['"`])\/tmp\/|join\(\s*tmpdir\(\)\s*,\s*['"`]/;

function fixedTmpPaths(file: string, text: string): string[] {
  return text
    .split('\n')
    .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
    .filter(({ line }) => (file.endsWith('.yml') ? /\/tmp\b/.test(line) : FIXED_TMP_PATH.test(line)))
    .map(({ at, line }) => `${at}: ${line.trim()}`);
}

describe('no fixed path under /tmp', () => {
  it('finds one where there is one (the check can fail)', () => {
    expect(fixedTmpPaths('a.ts', `const f = '/tmp/exocomp.tfplan';`)).toHaveLength(1);
    expect(fixedTmpPaths('a.ts', 'const f = join(tmpdir(), "plan", "approved.tfplan");')).toHaveLength(1);
    expect(fixedTmpPaths('t.yml', '    - cp plan /tmp/plan')).toHaveLength(1);
    expect(fixedTmpPaths('a.ts', `const d = await makePrivateDir('plan', tmpdir());`)).toEqual([]);
  });

  it('src/ and templates/ name none', async () => {
    const files = [...(await filesUnder('src')), ...(await filesUnder('templates'))].filter((f) =>
      /\.(ts|yml)$/.test(f),
    );
    expect(files.length).toBeGreaterThan(50);
    const found: string[] = [];
    for (const file of files) found.push(...fixedTmpPaths(file, await readFile(path.join(repoRoot, file), 'utf8')));
    expect(found).toEqual([]);
  });
});
