#!/usr/bin/env node
/**
 * Extracts the part of GitHub's OpenAPI description that the action set uses
 * (the operations behind src/platform/github/port.ts, and the artifact
 * look-ups of @actions/artifact across runs) into a small committed
 * fixture, test/fixtures/github-openapi-subset.json. The GitHub API double
 * (test/support/github-double.ts) validates every request and response against it.
 *
 * @octokit/openapi is ~385 MB installed, so it is not a dependency. To regenerate:
 *
 *   npm install --prefix /tmp/openapi @octokit/openapi
 *   node scripts/extract-openapi-subset.mjs \
 *     /tmp/openapi/node_modules/@octokit/openapi/generated/api.github.com.json
 *
 * Optional second argument: the output path (default: the fixture above).
 * When the port gains an operation, add it to OPERATIONS below and regenerate.
 * Both api.github.com.json and api.github.com.deref.json are accepted; the output
 * keeps `$ref`s (into components) so it stays small and readable.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Every `METHOD path` the port calls, and those @actions/artifact calls to
 * fetch an artifact of another run (`findBy`), exactly as the description
 * spells the path.
 */
const OPERATIONS = [
  'GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals',
  'GET /repos/{owner}/{repo}/environments/{environment_name}',
  'GET /repos/{owner}/{repo}/collaborators/{username}/permission',
  'GET /repos/{owner}/{repo}/issues/{issue_number}/comments',
  'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
  'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}',
  'GET /repos/{owner}/{repo}/issues',
  'POST /repos/{owner}/{repo}/issues',
  'PATCH /repos/{owner}/{repo}/issues/{issue_number}',
  'POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches',
  'GET /repos/{owner}/{repo}/actions/runs/{run_id}',
  'GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls',
  'GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts',
  'GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}',
  // exocomp doctor and the gate-setup warnings of the approve and plan jobs (src/platform/github/setup.ts)
  'GET /repos/{owner}/{repo}/rules/branches/{branch}',
  'GET /repos/{owner}/{repo}/rulesets/{ruleset_id}',
  'GET /repos/{owner}/{repo}/actions/secrets',
  'GET /repos/{owner}/{repo}/environments/{environment_name}/secrets',
  'GET /repos/{owner}/{repo}/actions/runs',
  // @actions/attest stores the apply's provenance attestation (src/platform/github/attest.ts)
  'POST /repos/{owner}/{repo}/attestations',
];

/**
 * GitHub answers any endpoint with these when a token lacks access, though the
 * description rarely lists them; the double validates such answers against this.
 */
const EXTRA_SCHEMAS = ['basic-error'];

/** Documentation-only keys dropped to keep the fixture small; they never affect validation. */
const DROPPED_KEYS = new Set(['examples', 'example', 'x-github', 'x-octokit', 'externalDocs', 'tags']);

const here = dirname(fileURLToPath(import.meta.url));
const [sourcePath, outputArg] = process.argv.slice(2);
if (!sourcePath) {
  console.error(
    'usage: node scripts/extract-openapi-subset.mjs <path to @octokit/openapi generated/api.github.com.json> [output]',
  );
  process.exit(2);
}
const outputPath = resolve(outputArg ?? join(here, '..', 'test', 'fixtures', 'github-openapi-subset.json'));
const source = JSON.parse(readFileSync(sourcePath, 'utf8'));

const strip = (value) => {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, child] of Object.entries(value)) {
    if (!DROPPED_KEYS.has(key)) out[key] = strip(child);
  }
  return out;
};

const refTarget = (ref) => {
  const match = /^#\/components\/([^/]+)\/([^/]+)$/.exec(ref);
  if (!match) throw new Error(`unsupported $ref ${ref}`);
  return { section: match[1], name: match[2] };
};

// Follows $refs transitively, copying each referenced component once.
const components = {};
const pending = [];
const collectRefs = (value) => {
  if (Array.isArray(value)) return value.forEach(collectRefs);
  if (value === null || typeof value !== 'object') return;
  if (typeof value.$ref === 'string') pending.push(value.$ref);
  Object.values(value).forEach(collectRefs);
};

const paths = {};
for (const operation of OPERATIONS) {
  const [method, path] = operation.split(' ');
  const pathItem = source.paths?.[path];
  const op = pathItem?.[method.toLowerCase()];
  if (!op) throw new Error(`${operation} is not in ${sourcePath}`);
  const entry = (paths[path] ??= {});
  if (pathItem.parameters) entry.parameters = strip(pathItem.parameters);
  entry[method.toLowerCase()] = strip(op);
  collectRefs(entry);
}
for (const name of EXTRA_SCHEMAS) pending.push(`#/components/schemas/${name}`);

while (pending.length > 0) {
  const ref = pending.pop();
  const { section, name } = refTarget(ref);
  if (components[section]?.[name]) continue;
  const found = source.components?.[section]?.[name];
  if (!found) throw new Error(`${ref} is not in ${sourcePath}`);
  const copy = strip(found);
  (components[section] ??= {})[name] = copy;
  collectRefs(copy);
}

const sortKeys = (record) => Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
const subset = {
  openapi: source.openapi,
  info: {
    title: `${source.info?.title ?? 'GitHub REST API'} (subset used by exocomp/provision)`,
    version: source.info?.version ?? 'unknown',
    'x-extracted-by': 'scripts/extract-openapi-subset.mjs',
    'x-source-package-version': sourcePackageVersion(sourcePath),
  },
  paths: sortKeys(paths),
  components: sortKeys(
    Object.fromEntries(Object.entries(components).map(([section, entries]) => [section, sortKeys(entries)])),
  ),
};
writeFileSync(outputPath, `${JSON.stringify(subset, null, 2)}\n`);
const count = Object.values(components).reduce((sum, entries) => sum + Object.keys(entries).length, 0);
console.log(`wrote ${outputPath}: ${OPERATIONS.length} operations, ${count} components`);

/** The @octokit/openapi version the description came from, when its package.json sits above it. */
function sourcePackageVersion(path) {
  try {
    return JSON.parse(readFileSync(join(dirname(resolve(path)), '..', 'package.json'), 'utf8')).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
