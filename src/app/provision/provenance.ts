/**
 * The provenance of an apply (docs/provenance.md, ADR 0027-provenance-statement):
 * the materials are digested before the apply, the statement is built once it
 * succeeded and recorded with the step's success, attested where the face
 * supplies an attestor; `provenance verify` holds it against the ledger and
 * the state as they are now.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { describeError, ExocompError } from '../../domain/errors.js';
import {
  buildProvenanceStatement,
  PROVENANCE_SCHEMA_VERSION,
  sha256Of,
  verifyProvenance,
  workspaceTreeDigest,
  type AttestationOutcome,
  type ProvenanceCheck,
  type ProvenanceRecord,
  type StateIdentity,
} from '../../domain/provenance.js';
import { stepOf, type Workflow } from '../../domain/workflow.js';
import { readProvenance, requireWorkflow } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { ProvenanceAttestation } from '../ports/attestor.js';
import type { AppContext } from '../runtime/context.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import { openTofu, requireWorkspaceDir } from './apply-workspace.js';

/** The files of a workspace that decide what tofu applies: configuration, variable files, the provider lock file. */
const WORKSPACE_FILE = /(\.(tf|tofu)(\.json)?|\.tfvars(\.json)?|^\.terraform\.lock\.hcl)$/;
/** What tofu writes into a workspace (providers, modules, local state) is not part of what was applied from. */
const SKIPPED_DIRS = new Set(['.terraform', '.git']);

/** What the apply is made from, digested before it runs (a material that cannot be read stops the apply first). */
export interface ApplyMaterials {
  workspaceDigest: string;
  playbookDigest: string;
}

export async function applyMaterials(app: AppContext, workflow: Workflow): Promise<ApplyMaterials> {
  const dir = await requireWorkspaceDir(workflow.workspace.path, app.cwd);
  const files = await workspaceFiles(dir);
  const playbook = resolve(app.cwd, workflow.playbook);
  const playbookText = await readFile(playbook).catch((error: NodeJS.ErrnoException) => {
    throw new ExocompError('usage', `cannot read the playbook ${workflow.playbook} (${error.code ?? error.message})`, {
      help: 'nothing was applied; the apply records the playbook it configures with: run from the checkout that holds it',
    });
  });
  return { workspaceDigest: workspaceTreeDigest(files), playbookDigest: sha256Of(playbookText) };
}

async function workspaceFiles(dir: string): Promise<{ path: string; content: Buffer }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter(
    (entry) =>
      entry.isFile() &&
      WORKSPACE_FILE.test(entry.name) &&
      !relative(dir, entry.parentPath)
        .split(/[\\/]/)
        .some((part) => SKIPPED_DIRS.has(part)),
  );
  return Promise.all(
    files.map(async (entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path: relative(dir, path).split(/[\\/]/).join('/'), content: await readFile(path) };
    }),
  );
}

/** Bounds an attestation: a signing service that does not answer must not hold the chain. */
const ATTEST_TIMEOUT_MS = 120_000;

/**
 * The provenance record of an apply that succeeded: the statement and, where
 * asked, its attestation. Attesting never fails the apply: a failure is warned
 * and recorded.
 */
export async function provenanceOfApply(
  app: AppContext,
  workflow: Workflow,
  applied: { planDigest: string; state: StateIdentity | undefined; materials: ApplyMaterials },
  attestation: ProvenanceAttestation | undefined,
  say: { info(message: string): void; warn(message: string): void },
): Promise<ProvenanceRecord> {
  const step = stepOf(workflow, 'apply');
  const sha = workflow.trigger.sha;
  const statement = buildProvenanceStatement({
    workflowId: workflow.id,
    workspace: workflow.workspace,
    playbook: workflow.playbook,
    planDigest: applied.planDigest,
    ...(applied.state ? { state: applied.state } : {}),
    ...(sha
      ? { commit: { sha, ...(workflow.trigger.repository ? { repository: workflow.trigger.repository } : {}) } }
      : {}),
    workspaceDigest: applied.materials.workspaceDigest,
    playbookDigest: applied.materials.playbookDigest,
    approval: workflow.approval,
    builderId: step.runUrl ?? workflow.trigger.runUrl ?? 'urn:exocomp:cli',
    ...(step.startedAt ? { startedOn: step.startedAt } : {}),
    finishedOn: app.now().toISOString(),
  });
  const outcome = attestation === undefined ? undefined : await attestStatement(app, statement, attestation, say);
  return {
    schemaVersion: PROVENANCE_SCHEMA_VERSION,
    workflowId: workflow.id,
    statement,
    ...(outcome ? { attestation: outcome } : {}),
  };
}

async function attestStatement(
  app: AppContext,
  statement: ProvenanceRecord['statement'],
  attestation: ProvenanceAttestation,
  say: { info(message: string): void; warn(message: string): void },
): Promise<AttestationOutcome> {
  if ('notAttempted' in attestation) return { outcome: 'not-attempted', reason: attestation.notAttempted };
  let timer: NodeJS.Timeout | undefined;
  try {
    const made = await Promise.race([
      attestation.attestor.attest(statement),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${ATTEST_TIMEOUT_MS / 1000}s`)),
          ATTEST_TIMEOUT_MS,
        ).unref();
      }),
    ]);
    say.info(`provenance attested${made.id ? ` (attestation ${made.id})` : ''}`);
    return { outcome: 'attested', at: app.now().toISOString(), ...made };
  } catch (error) {
    const reason = describeError(error);
    say.warn(`the apply succeeded, but its provenance was not attested: ${reason}`);
    return { outcome: 'failed', at: app.now().toISOString(), reason };
  } finally {
    clearTimeout(timer);
  }
}

// ---- show and verify

function requireProvenance(snapshot: LedgerSnapshot, workflow: Workflow): ProvenanceRecord {
  const record = readProvenance(snapshot, workflow.id);
  if (record === undefined) {
    throw new ExocompError('usage', `workflow ${workflow.id} has no provenance in the ledger`, {
      help:
        stepOf(workflow, 'apply').state === 'succeeded'
          ? 'its apply ran before exocomp recorded provenance'
          : 'provenance is recorded when the apply step succeeds; see `exocomp provision status ' + workflow.id + '`',
    });
  }
  return record;
}

export async function showProvenance(app: AppContext, workflowId: string): Promise<ProvenanceRecord> {
  const snapshot = await app.store.read();
  return requireProvenance(snapshot, requireWorkflow(snapshot, workflowId));
}

export interface ProvenanceVerdict {
  record: ProvenanceRecord;
  checks: ProvenanceCheck[];
  ok: boolean;
}

/** Holds the recorded statement against the workflow and approval in the ledger and the workspace's state now. */
export async function verifyWorkflowProvenance(
  app: AppContext,
  workflowId: string,
  tofuOptions: { tofuBinary?: string | undefined; secrets: SecretRegistry; info(message: string): void },
): Promise<ProvenanceVerdict> {
  const snapshot = await app.store.read();
  const workflow = requireWorkflow(snapshot, workflowId);
  const record = requireProvenance(snapshot, workflow);
  const tofu = await openTofu(app, { workspacePath: workflow.workspace.path, ...tofuOptions });
  await tofu.init();
  const state = await tofu.stateIdentity();
  const checks = verifyProvenance(record.statement, {
    workflowId: workflow.id,
    workspace: workflow.workspace,
    playbook: workflow.playbook,
    approval: workflow.approval,
    ...(workflow.trigger.sha ? { commit: workflow.trigger.sha } : {}),
    state,
  });
  return { record, checks, ok: checks.every((check) => check.ok) };
}
