/**
 * `exocomp keys init`: the three keys a deployment needs, made once on a
 * trusted machine and then stored as CI secrets (docs/keys.md).
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { generateKeyPair } from '../../adapters/ssh-keys.js';
import { KEY_VARIABLES, USER_CA_KEY_VARIABLE } from '../../domain/key-variables.js';

export interface KeyFile {
  /** What it is for. */
  purpose: string;
  path: string;
  publicPath?: string;
  /** The CI secret (GitHub) or File variable (GitLab) to store it in. */
  secret: string;
  /** The CLI option that takes it. */
  option: string;
}

export const KEY_FILES = {
  fleet: {
    name: 'fleet_ed25519',
    secret: KEY_VARIABLES.fleet,
    option: '--fleet-key',
    purpose: 'the fleet key: onboarding installs its public half; plays connect with it',
  },
  bootstrap: {
    name: 'bootstrap_ed25519',
    secret: KEY_VARIABLES.bootstrap,
    option: '--bootstrap-key',
    purpose: "the bootstrap key: a new host's image or cloud-init authorizes its public half; only onboarding uses it",
  },
  seal: {
    name: 'seal.key',
    secret: KEY_VARIABLES.seal,
    option: `--seal-key keys/seal.key or ${KEY_VARIABLES.seal}`,
    purpose: "the seal key: encrypts the workspace's sensitive outputs in the ledger",
  },
} as const;

/** `keys init --user-ca`: the CA that signs each run's fleet certificate (docs/keys.md "User CA"). */
export const USER_CA_KEY_FILE = {
  name: 'user_ca_ed25519',
  secret: USER_CA_KEY_VARIABLE,
  option: '--user-ca-key',
  purpose:
    'the user CA: onboarding makes hosts trust its public half for the fleet user; each run signs a key with it that expires with the job',
} as const;

export async function initKeys(
  dir: string,
  cwd: string,
  options: { force: boolean; userCa?: boolean },
): Promise<KeyFile[]> {
  const target = resolve(cwd, dir);
  await mkdir(target, { recursive: true, mode: 0o700 });
  const files = options.userCa ? [USER_CA_KEY_FILE] : Object.values(KEY_FILES);
  const paths = files.flatMap((k) => [
    join(target, k.name),
    ...(k.name.endsWith('.key') ? [] : [join(target, `${k.name}.pub`)]),
  ]);
  await refuseOverwrite(paths, options.force);
  if (options.userCa) return [await makePair(target, USER_CA_KEY_FILE, 'exocomp user CA', options.force)];
  const made: KeyFile[] = [];
  for (const kind of ['fleet', 'bootstrap'] as const)
    made.push(await makePair(target, KEY_FILES[kind], `exocomp ${kind}`, options.force));
  const seal = KEY_FILES.seal;
  const sealPath = join(target, seal.name);
  await writeFile(sealPath, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  await chmod(sealPath, 0o600);
  made.push({ purpose: seal.purpose, path: sealPath, secret: seal.secret, option: seal.option });
  return made;
}

async function makePair(
  target: string,
  { name, secret, option, purpose }: Omit<KeyFile, 'path' | 'publicPath'> & { name: string },
  comment: string,
  force: boolean,
): Promise<KeyFile> {
  const path = join(target, name);
  if (force) await Promise.all([path, `${path}.pub`].map((p) => rm(p, { force: true })));
  await generateKeyPair(path, comment);
  await chmod(path, 0o600);
  return { purpose, path, publicPath: `${path}.pub`, secret, option };
}

async function refuseOverwrite(paths: string[], force: boolean): Promise<void> {
  if (!force) {
    const existing = (
      await Promise.all(paths.map(async (p) => ((await lstat(p).catch(() => undefined)) ? p : undefined)))
    ).filter((p) => p !== undefined);
    if (existing.length > 0) {
      throw new UsageError(
        `${existing.join(', ')} already exist${existing.length === 1 ? 's' : ''}; keys are never overwritten silently`,
        'choose another --dir, or pass --force to replace them (hosts onboarded with the old fleet key keep it until re-onboarded: see docs/keys.md)',
      );
    }
  }
}
