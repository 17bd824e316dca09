/**
 * The approved plan travelling between jobs (DESIGN.md §5). A saved plan holds
 * sensitive values in clear and artifacts of public repositories can be
 * downloaded by others, so it travels only sealed: AES-256-GCM under a key
 * derived (scrypt, random salt) from the seal key, the workflow id bound in as
 * additional data so a sealed plan cannot be replayed into another workflow.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { RepoRef } from './port.js';

const MAGIC = Buffer.from('exocomp-plan/v1\n', 'utf8');
const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;

function keyFor(sealKey: string, salt: Buffer): Buffer {
  return scryptSync(sealKey, salt, 32, SCRYPT);
}

export function sealPlan(plan: Buffer, sealKey: string, workflowId: string): Buffer {
  const salt = randomBytes(SALT_BYTES);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyFor(sealKey, salt), iv);
  cipher.setAAD(Buffer.from(workflowId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plan), cipher.final()]);
  return Buffer.concat([MAGIC, salt, iv, cipher.getAuthTag(), ciphertext]);
}

export function unsealPlan(sealed: Buffer, sealKey: string, workflowId: string): Buffer {
  const header = MAGIC.length + SALT_BYTES + IV_BYTES + TAG_BYTES;
  if (sealed.length < header || !sealed.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new ExocompError('seal', 'the plan artifact is not a sealed exocomp plan', { help: 'nothing was applied; re-run the plan job' });
  }
  let offset = MAGIC.length;
  const take = (n: number) => sealed.subarray(offset, (offset += n));
  const salt = take(SALT_BYTES);
  const iv = take(IV_BYTES);
  const tag = take(TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', keyFor(sealKey, salt), iv);
  decipher.setAAD(Buffer.from(workflowId, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(offset)), decipher.final()]);
  } catch {
    throw new ExocompError('seal', `the plan artifact of ${workflowId} does not open with this seal key (a different key, or the artifact was altered)`, {
      help: 'nothing was applied; pass the seal key the plan job used, or re-run the plan job',
    });
  }
}

/** Where sealed plans are kept between jobs and runs. */
export interface ArtifactStore {
  /** Uploads one file as an artifact of this run, named after the file. */
  upload(file: string): Promise<void>;
  /** Downloads the artifact `name` into `dir`; the file's path, or undefined when there is none. */
  download(name: string, dir: string): Promise<string | undefined>;
}

/** Another run of the repository, whose artifacts are reached through the REST API. */
export interface OtherRun {
  runId: number;
  repository: RepoRef;
  /** Needs `actions: read`. */
  token: string;
}

/**
 * @actions/artifact, loaded only by the jobs that move plans (it is large).
 * Downloads come from this run (the runner's results service), or from
 * `from` when the plan was made by another run (the dispatched continuation).
 */
export function actionsArtifactStore(from?: OtherRun): ArtifactStore {
  const client = async () => new (await import('@actions/artifact')).DefaultArtifactClient();
  const findBy = from && { token: from.token, workflowRunId: from.runId, repositoryOwner: from.repository.owner, repositoryName: from.repository.repo };
  return {
    async upload(file) {
      await (await client()).uploadArtifact(basename(file), [file], dirname(file), { skipArchive: true, retentionDays: 7 });
    },
    async download(name, dir) {
      const artifacts = await client();
      let id: number;
      try {
        id = (await artifacts.getArtifact(name, findBy && { findBy })).artifact.id;
      } catch (error) {
        if ((error as Error).name === 'ArtifactNotFoundError' || statusOf(error) === 404) return undefined;
        if (from && (statusOf(error) === 403 || statusOf(error) === 401)) {
          throw new ExocompError('permission', `GitHub refused to list the artifacts of run ${from.runId} (${statusOf(error)}), where the approved plan was made`, {
            help: 'grant the job’s token `actions: read` in `permissions:` (naming any permission sets the others to none); nothing was applied',
          });
        }
        throw error;
      }
      // Sealed plans are uploaded unarchived; the file keeps its name.
      await artifacts.downloadArtifact(id, { path: dir, skipDecompress: true, ...(findBy && { findBy }) });
      const [file] = await readdir(dir);
      return file === undefined ? undefined : join(dir, file);
    },
  };
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

export function planArtifactName(workflowId: string): string {
  return `exocomp-plan-${workflowId}.sealed`;
}

export async function uploadSealedPlan(store: ArtifactStore, planFile: string, sealKey: string, workflowId: string, dir: string): Promise<void> {
  const sealedFile = join(dir, planArtifactName(workflowId));
  await writeFile(sealedFile, sealPlan(await readFile(planFile), sealKey, workflowId), { mode: 0o600 });
  await store.upload(sealedFile);
}

/** The approved plan, unsealed into `dir`; undefined when the store holds none. */
export async function downloadSealedPlan(store: ArtifactStore, sealKey: string, workflowId: string, dir: string): Promise<string | undefined> {
  const sealedFile = await store.download(planArtifactName(workflowId), join(dir, 'download'));
  if (sealedFile === undefined) return undefined;
  const planFile = join(dir, 'approved.tfplan');
  await writeFile(planFile, unsealPlan(await readFile(sealedFile), sealKey, workflowId), { mode: 0o600 });
  return planFile;
}
