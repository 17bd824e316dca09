/**
 * The approved plan travelling between jobs and runs. A saved plan holds
 * sensitive values in clear and artifacts of public repositories can be
 * downloaded by others, so it travels only sealed: AES-256-GCM under a key
 * derived (scrypt, random salt) from the seal key, the workflow id bound in as
 * additional data so a sealed plan cannot be replayed into another workflow.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { ArtifactPort } from '../ports/ci-platform.js';

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
    throw new ExocompError('seal', 'the plan artifact is not a sealed exocomp plan', {
      help: 'nothing was applied; re-run the plan job',
    });
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
    throw new ExocompError(
      'seal',
      `the plan artifact of ${workflowId} does not open with this seal key (a different key, or the artifact was altered)`,
      {
        help: 'nothing was applied; pass the seal key the plan job used, or re-run the plan job',
      },
    );
  }
}

/**
 * The artifact holding the sealed plan an attempt made. A run's artifact names are unique across its attempts
 * (GitHub answers a second upload of a name with 409 "an artifact with this name already exists on the workflow
 * run"), so a re-run that plans again uploads under its own attempt's name; records without an attempt keep the
 * name they were uploaded under.
 */
export function planArtifactName(workflowId: string, runAttempt?: number): string {
  return `exocomp-plan-${workflowId}${runAttempt === undefined ? '' : `-attempt-${runAttempt}`}.sealed`;
}

export async function uploadSealedPlan(
  store: ArtifactPort,
  planFile: string,
  sealKey: string,
  workflowId: string,
  dir: string,
  runAttempt?: number,
): Promise<void> {
  const sealedFile = join(dir, planArtifactName(workflowId, runAttempt));
  await writeFile(sealedFile, sealPlan(await readFile(planFile), sealKey, workflowId), { mode: 0o600 });
  await store.upload(sealedFile);
}

/** The approved plan, unsealed into `dir`; undefined when the store holds none. */
export async function downloadSealedPlan(
  store: ArtifactPort,
  runId: number,
  sealKey: string,
  workflowId: string,
  dir: string,
  runAttempt?: number,
): Promise<string | undefined> {
  const sealedFile = await store.download(planArtifactName(workflowId, runAttempt), runId, join(dir, 'download'));
  if (sealedFile === undefined) return undefined;
  const planFile = join(dir, 'approved.tfplan');
  await writeFile(planFile, unsealPlan(await readFile(sealedFile), sealKey, workflowId), { mode: 0o600 });
  return planFile;
}
