/**
 * Issue 11: the CLI reaches a GitLab job (or any machine) as the published npm
 * package or the image the Dockerfile builds. The tarball is packed from this
 * checkout, installed into an empty directory with an empty npm cache and
 * --offline (so it proves nothing else is downloaded), and run.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser, type Copy, type From } from 'dockerfile-ast';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const npm = (args: string[], cwd: string, cache: string) =>
  runProcess('npm', [...args, '--cache', cache, '--no-audit', '--no-fund', '--loglevel', 'error'], {
    cwd,
    timeoutMs: 120_000,
  });

describe('npm package', () => {
  let scratch: string;
  let tarball: string;
  let files: string[];

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'exocomp-pack-'));
    const packed = await npm(
      ['pack', '--json', '--pack-destination', scratch],
      repoRoot,
      path.join(scratch, 'pack-cache'),
    );
    expect(packed.code, packed.stderr).toBe(0);
    const [entry] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    tarball = path.join(scratch, entry.filename);
    files = entry.files.map((f) => f.path).sort();
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('is publishable and carries only the CLI bundle (with its chunks), the seeded playbook and its documents', async () => {
    const manifest = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.private).toBeUndefined();
    expect(manifest.bin).toEqual({ exocomp: 'dist/cli.js' });
    expect(manifest.engines).toEqual({ node: '>=20' });
    // The bundle holds every library it uses; a runtime dependency would be a download at job time.
    expect(manifest.dependencies).toBeUndefined();
    const chunks = (await readdir(path.join(repoRoot, 'dist/cli-chunks'))).map((name) => `dist/cli-chunks/${name}`);
    expect(chunks.length).toBeGreaterThan(0);
    expect(files).toEqual(
      ['LICENSE', 'README.md', ...chunks, 'dist/cli.js', 'package.json', 'playbooks/onboard.yml'].sort(),
    );
  });

  it('installs into an empty directory offline with an empty cache and runs exocomp --help', async () => {
    const app = path.join(scratch, 'app');
    await runProcess('mkdir', [app]);
    const installed = await npm(['install', '--offline', tarball], app, path.join(scratch, 'empty-cache'));
    expect(installed.code, installed.stderr).toBe(0);
    const bin = path.join(app, 'node_modules/.bin/exocomp');
    const help = await runProcess(bin, ['--help'], { cwd: app });
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: exocomp /);
    for (const command of ['provision', 'playbook', 'schedule']) expect(help.stdout).toContain(command);
    // The onboarding step finds its seeded playbook beside the installed bundle.
    expect(existsSync(path.join(app, 'node_modules/@exocomp/provision/playbooks/onboard.yml'))).toBe(true);
    // The parts the CLI loads on demand (the GitLab API client) load from the installed package.
    const chunkDir = path.join(app, 'node_modules/@exocomp/provision/dist/cli-chunks');
    for (const chunk of await readdir(chunkDir)) {
      const loaded = await runProcess(
        process.execPath,
        ['--input-type=module', '-e', `await import(${JSON.stringify(path.join(chunkDir, chunk))})`],
        { cwd: app },
      );
      expect(loaded.code, `${chunk}: ${loaded.stderr}`).toBe(0);
    }
  });
});

describe('Dockerfile of the job image', () => {
  const parse = async () => DockerfileParser.parse(await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8'));

  it('parses into the tofu, package and final stages', async () => {
    const dockerfile = await parse();
    const known = new Set(['ARG', 'FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'LABEL', 'USER']);
    for (const instruction of dockerfile.getInstructions())
      expect(known, instruction.toString()).toContain(instruction.getKeyword());
    const froms = dockerfile.getFROMs();
    expect(froms.map((f: From) => f.getBuildStage())).toEqual(['tofu', 'package', null]);
    expect([froms[0]?.getRegistry(), froms[0]?.getImageName()]).toEqual(['ghcr.io', 'opentofu/opentofu']);
    expect(froms[2]?.getImageName()).toBe('node');
    // A GitLab runner starts the job's shell; an ENTRYPOINT would stand in its way.
    expect(dockerfile.getENTRYPOINTs()).toHaveLength(0);
  });

  it('installs node (base), tofu, ansible-core, openssh-client and git, and the packed CLI offline', async () => {
    const dockerfile = await parse();
    const final = dockerfile.getFROMs()[2];
    const finalStart = final?.getRange().start.line ?? Number.MAX_SAFE_INTEGER;
    const finalInstructions = dockerfile.getInstructions().filter((i) => i.getRange().start.line > finalStart);
    const runs = finalInstructions.filter((i) => i.getKeyword() === 'RUN').map((i) => i.getRawArgumentsContent() ?? '');
    const apt = runs.find((r) => r.includes('apt-get install')) ?? '';
    for (const pkg of ['ansible-core', 'openssh-client', 'git']) expect(apt.split(/\s+/)).toContain(pkg);
    const copies = finalInstructions.filter((i): i is Copy => i.getKeyword() === 'COPY');
    const fromStages = copies.map((c) => [
      c.getFromFlag()?.getValue(),
      c
        .getArguments()
        .map((a) => a.getValue())
        .join(' '),
    ]);
    expect(fromStages).toContainEqual(['tofu', '/usr/local/bin/tofu /usr/local/bin/tofu']);
    expect(fromStages).toContainEqual(['package', '/tmp/exocomp.tgz /tmp/exocomp.tgz']);
    expect(runs.some((r) => /npm install --global --offline .*\/tmp\/exocomp\.tgz/.test(r))).toBe(true);
    // Nothing fetched from a URL at build time besides the base images and Debian's packages.
    expect(dockerfile.getInstructions().some((i) => i.getKeyword() === 'ADD')).toBe(false);
    expect(runs.join('\n')).not.toMatch(/\b(curl|wget)\b/);
  });

  it('copies from the build context only files the npm package ships', async () => {
    const dockerfile = await parse();
    const packageStage = dockerfile
      .getInstructions()
      .filter((i): i is Copy => i.getKeyword() === 'COPY' && (i as Copy).getFromFlag() === null);
    const sources = packageStage.flatMap((c) =>
      c
        .getArguments()
        .slice(0, -1)
        .map((a) => a.getValue()),
    );
    expect(sources.sort()).toEqual([
      'LICENSE',
      'README.md',
      'dist/cli-chunks',
      'dist/cli.js',
      'package.json',
      'playbooks',
    ]);
    for (const source of sources) expect(existsSync(path.join(repoRoot, source)), source).toBe(true);
  });
});
