/**
 * The provenance of an apply (ADR 0027-provenance-statement): an in-toto
 * Statement v1 with the SLSA provenance v1 predicate, built from facts the
 * apply step gathered, and checked against what the ledger and the state say
 * now. Pure: digests are computed here from values handed in, nothing is read.
 *
 * Field names follow https://in-toto.io/Statement/v1 (`_type`, `subject`,
 * `predicateType`, `predicate`; a subject is a ResourceDescriptor with `name`,
 * `digest`, `annotations`) and https://slsa.dev/provenance/v1
 * (`buildDefinition.{buildType, externalParameters, internalParameters,
 * resolvedDependencies}`, `runDetails.{builder.{id, version}, metadata.{invocationId,
 * startedOn, finishedOn}}`).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './plan.js';
import type { Approval } from './workflow.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
/** Says how to read externalParameters and the resolved dependencies: described in docs/provenance.md. */
export const APPLY_BUILD_TYPE = 'https://github.com/exocomp/provision/blob/main/docs/provenance.md#apply-v1';

/** The names of the statement's parts, as verify reports them. */
export const SUBJECT_NAMES = { plan: 'plan', state: 'state' } as const;
export const MATERIAL_NAMES = {
  commit: 'commit',
  workspace: 'workspace',
  playbook: 'playbook',
  approval: 'approval',
} as const;

const digestSchema = z.record(z.string().min(1), z.string().min(1));

/** An in-toto ResourceDescriptor (the fields this statement uses). */
export const resourceDescriptorSchema = z.object({
  name: z.string().min(1),
  uri: z.string().min(1).optional(),
  digest: digestSchema,
  annotations: z.record(z.string(), z.unknown()).optional(),
});
export type ResourceDescriptor = z.infer<typeof resourceDescriptorSchema>;

export const stateIdentitySchema = z.object({ lineage: z.string().min(1), serial: z.number().int().nonnegative() });
export type StateIdentity = z.infer<typeof stateIdentitySchema>;

export const provenanceStatementSchema = z.object({
  _type: z.literal(STATEMENT_TYPE),
  subject: z
    .array(resourceDescriptorSchema)
    .min(1)
    .refine((subjects) => subjects.every((s) => Object.keys(s.digest).length > 0), 'a subject without a digest'),
  predicateType: z.literal(SLSA_PROVENANCE_V1),
  predicate: z.object({
    buildDefinition: z.object({
      buildType: z.string().min(1),
      externalParameters: z.object({
        workflow: z.string().min(1),
        workspace: z.object({ name: z.string().min(1), path: z.string().min(1) }),
        playbook: z.string().min(1),
      }),
      internalParameters: z.record(z.string(), z.unknown()).optional(),
      resolvedDependencies: z.array(resourceDescriptorSchema),
    }),
    runDetails: z.object({
      builder: z.object({ id: z.string().min(1), version: z.record(z.string(), z.string()).optional() }),
      metadata: z
        .object({
          invocationId: z.string().optional(),
          startedOn: z.string().optional(),
          finishedOn: z.string().optional(),
        })
        .optional(),
    }),
  }),
});
export type ProvenanceStatement = z.infer<typeof provenanceStatementSchema>;

/** What the apply step knows once the apply succeeded. */
export interface ApplyFacts {
  workflowId: string;
  workspace: { name: string; path: string };
  playbook: string;
  /** planFingerprint of the plan that was applied (what an approval binds). */
  planDigest: string;
  /** The state the apply left; undefined only when the workspace has none (a configuration that manages nothing). */
  state?: StateIdentity;
  /** The commit the job ran on, and its repository (`owner/repo`, a GitLab project path); absent where none is known. */
  commit?: { sha: string; repository?: string };
  /** sha256 of the workspace's configuration (workspaceTreeDigest). */
  workspaceDigest: string;
  /** sha256 of the playbook file. */
  playbookDigest: string;
  approval: Approval;
  /** Who ran the apply: the CI run's URL, or a local builder id. */
  builderId: string;
  startedOn?: string;
  finishedOn: string;
}

export function sha256Of(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The digest of the workspace's configuration: its files' relative paths and
 * contents, in path order, so a renamed or edited file changes it.
 */
export function workspaceTreeDigest(files: readonly { path: string; content: Buffer | string }[]): string {
  const entries = [...files]
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map((file) => `${sha256Of(file.content)}  ${file.path}\n`);
  return sha256Of(entries.join(''));
}

/** The state's identity as a digest: a subject must carry one, and lineage/serial name one state exactly. */
export function stateDigest(state: StateIdentity): string {
  return sha256Of(canonicalJson({ lineage: state.lineage, serial: state.serial }));
}

/** The approver's decision as recorded (the fields that decide; everything else on the record is bookkeeping). */
function decisionOf(approval: Approval) {
  return {
    state: approval.state,
    by: approval.by ?? null,
    at: approval.at ?? null,
    via: approval.via ?? null,
    planFingerprint: approval.planFingerprint ?? null,
    configFingerprint: approval.configFingerprint ?? null,
  };
}

export function approvalDigest(approval: Approval): string {
  return sha256Of(canonicalJson(decisionOf(approval)));
}

export function buildProvenanceStatement(facts: ApplyFacts): ProvenanceStatement {
  const decision = decisionOf(facts.approval);
  const dependencies: ResourceDescriptor[] = [
    ...(facts.commit
      ? [
          {
            name: MATERIAL_NAMES.commit,
            digest: { gitCommit: facts.commit.sha },
            ...(facts.commit.repository ? { annotations: { repository: facts.commit.repository } } : {}),
          },
        ]
      : []),
    {
      name: MATERIAL_NAMES.workspace,
      digest: { sha256: facts.workspaceDigest },
      annotations: { path: facts.workspace.path },
    },
    { name: MATERIAL_NAMES.playbook, digest: { sha256: facts.playbookDigest }, annotations: { path: facts.playbook } },
    {
      name: MATERIAL_NAMES.approval,
      digest: { sha256: approvalDigest(facts.approval) },
      annotations: Object.fromEntries(Object.entries(decision).filter(([, value]) => value !== null)),
    },
  ];
  return provenanceStatementSchema.parse({
    _type: STATEMENT_TYPE,
    subject: [
      { name: SUBJECT_NAMES.plan, digest: { sha256: facts.planDigest }, annotations: { workflow: facts.workflowId } },
      ...(facts.state
        ? [
            {
              name: SUBJECT_NAMES.state,
              digest: { sha256: stateDigest(facts.state) },
              annotations: {
                workspace: facts.workspace.name,
                lineage: facts.state.lineage,
                serial: facts.state.serial,
              },
            },
          ]
        : []),
    ],
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: APPLY_BUILD_TYPE,
        externalParameters: { workflow: facts.workflowId, workspace: facts.workspace, playbook: facts.playbook },
        resolvedDependencies: dependencies,
      },
      runDetails: {
        builder: { id: facts.builderId },
        metadata: {
          invocationId: facts.workflowId,
          ...(facts.startedOn ? { startedOn: facts.startedOn } : {}),
          finishedOn: facts.finishedOn,
        },
      },
    },
  });
}

// ---- the ledger record

export const PROVENANCE_SCHEMA_VERSION = 1;

/** What became of the attestation of the statement: made, not tried (and why), or failed (the apply still stands). */
export const attestationOutcomeSchema = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('attested'), at: z.string(), id: z.string().optional(), url: z.string().optional() }),
  z.object({ outcome: z.literal('not-attempted'), reason: z.string() }),
  z.object({ outcome: z.literal('failed'), at: z.string(), reason: z.string() }),
]);
export type AttestationOutcome = z.infer<typeof attestationOutcomeSchema>;

export const provenanceRecordSchema = z.object({
  schemaVersion: z.literal(PROVENANCE_SCHEMA_VERSION),
  workflowId: z.string().min(1),
  statement: provenanceStatementSchema,
  attestation: attestationOutcomeSchema.optional(),
});
export type ProvenanceRecord = z.infer<typeof provenanceRecordSchema>;

// ---- verification

/** What the ledger and the state say now, to hold a statement against. */
export interface ProvenanceEvidence {
  workflowId: string;
  workspace: { name: string; path: string };
  playbook: string;
  approval: Approval;
  /** The commit the workflow records (its trigger), when it records one. */
  commit?: string;
  /** The current state's identity; undefined when the workspace has no state. */
  state: StateIdentity | undefined;
}

export interface ProvenanceCheck {
  /** The part of the statement checked: `subject plan`, `subject state`, `material approval`, ... */
  part: string;
  ok: boolean;
  /** What was compared, or what differs. */
  detail: string;
}

function subjectOf(statement: ProvenanceStatement, name: string): ResourceDescriptor | undefined {
  return statement.subject.find((s) => s.name === name);
}

function materialOf(statement: ProvenanceStatement, name: string): ResourceDescriptor | undefined {
  return statement.predicate.buildDefinition.resolvedDependencies.find((d) => d.name === name);
}

const short = (digest: string | undefined) => (digest === undefined ? '(none)' : digest.slice(0, 12));

/** Every check of a statement against the evidence, in a fixed order; the statement verifies when all are ok. */
export function verifyProvenance(statement: ProvenanceStatement, evidence: ProvenanceEvidence): ProvenanceCheck[] {
  const checks: ProvenanceCheck[] = [];
  const check = (part: string, ok: boolean, detail: string) => checks.push({ part, ok, detail });
  const params = statement.predicate.buildDefinition.externalParameters;

  const named = `${params.workflow} on ${params.workspace.name} (${params.workspace.path})`;
  const recordedAs = `${evidence.workflowId} on ${evidence.workspace.name} (${evidence.workspace.path})`;
  check(
    'workflow',
    named === recordedAs,
    named === recordedAs ? named : `the statement names ${named}, the ledger ${recordedAs}`,
  );

  const plan = subjectOf(statement, SUBJECT_NAMES.plan)?.digest.sha256;
  const approved = evidence.approval.planFingerprint;
  if (approved === undefined) {
    check(
      `subject ${SUBJECT_NAMES.plan}`,
      plan !== undefined,
      plan === undefined ? 'no plan digest' : `sha256:${short(plan)} (no approval bound a plan)`,
    );
  } else {
    check(
      `subject ${SUBJECT_NAMES.plan}`,
      plan === approved,
      plan === approved
        ? `sha256:${short(plan)} is the approved plan`
        : `the statement's plan digest sha256:${short(plan)} differs from the approved plan's sha256:${short(approved)}`,
    );
  }

  const stateSubject = subjectOf(statement, SUBJECT_NAMES.state);
  const claimed = stateIdentitySchema.safeParse(stateSubject?.annotations ?? {});
  const claimedText = claimed.success
    ? `serial ${claimed.data.serial} of lineage ${claimed.data.lineage}`
    : '(unreadable)';
  if (evidence.state === undefined && stateSubject === undefined) {
    check(`subject ${SUBJECT_NAMES.state}`, true, 'no state then, none now');
  } else if (stateSubject === undefined) {
    check(`subject ${SUBJECT_NAMES.state}`, false, 'the statement names no state, but the workspace has one now');
  } else if (evidence.state === undefined) {
    check(
      `subject ${SUBJECT_NAMES.state}`,
      false,
      `the workspace has no state now; the statement names ${claimedText}`,
    );
  } else {
    const now = evidence.state;
    const digestMatches = stateSubject?.digest.sha256 === stateDigest(now);
    const annotationsMatch =
      claimed.success && claimed.data.lineage === now.lineage && claimed.data.serial === now.serial;
    check(
      `subject ${SUBJECT_NAMES.state}`,
      digestMatches && annotationsMatch,
      digestMatches && annotationsMatch
        ? `serial ${now.serial} of lineage ${now.lineage}`
        : `the statement names ${claimedText}${digestMatches || !annotationsMatch ? '' : ' (its digest disagrees)'}, the state is now serial ${now.serial} of lineage ${now.lineage}`,
    );
  }

  const approval = materialOf(statement, MATERIAL_NAMES.approval)?.digest.sha256;
  const recorded = approvalDigest(evidence.approval);
  check(
    `material ${MATERIAL_NAMES.approval}`,
    approval === recorded,
    approval === recorded
      ? `${evidence.approval.state}${evidence.approval.by ? ` by ${evidence.approval.by}` : ''}`
      : `the statement's approval sha256:${short(approval)} differs from the ledger's decision sha256:${short(recorded)} (${evidence.approval.state})`,
  );

  const commit = materialOf(statement, MATERIAL_NAMES.commit)?.digest.gitCommit;
  if (evidence.commit !== undefined && evidence.commit !== '') {
    check(
      `material ${MATERIAL_NAMES.commit}`,
      commit === evidence.commit,
      commit === evidence.commit
        ? commit
        : `the statement's commit ${commit ?? '(none)'} differs from the workflow's ${evidence.commit}`,
    );
  }

  const playbook = materialOf(statement, MATERIAL_NAMES.playbook);
  check(
    `material ${MATERIAL_NAMES.playbook}`,
    playbook !== undefined && params.playbook === evidence.playbook,
    playbook === undefined
      ? 'no playbook digest'
      : params.playbook === evidence.playbook
        ? `${evidence.playbook} sha256:${short(playbook.digest.sha256)}`
        : `the statement names ${params.playbook}, the workflow ${evidence.playbook}`,
  );
  const workspace = materialOf(statement, MATERIAL_NAMES.workspace);
  check(
    `material ${MATERIAL_NAMES.workspace}`,
    workspace !== undefined,
    workspace === undefined ? 'no workspace digest' : `sha256:${short(workspace.digest.sha256)}`,
  );
  return checks;
}
