import { describe, expect, it } from 'vitest';
import {
  approvalDigest,
  buildProvenanceStatement,
  provenanceRecordSchema,
  provenanceStatementSchema,
  SLSA_PROVENANCE_V1,
  STATEMENT_TYPE,
  stateDigest,
  verifyProvenance,
  workspaceTreeDigest,
  type ApplyFacts,
  type ProvenanceEvidence,
  type ProvenanceStatement,
} from '../../src/domain/provenance.js';
import type { Approval } from '../../src/domain/workflow.js';

const PLAN = 'a'.repeat(64);
const approval: Approval = {
  required: true,
  state: 'approved',
  by: 'reviewer',
  at: '2026-12-01T10:00:00.000Z',
  via: 'cli',
  planFingerprint: PLAN,
  planSummary: '+1 ~0 -0',
  configFingerprint: 'c'.repeat(64),
};

function facts(overrides: Partial<ApplyFacts> = {}): ApplyFacts {
  return {
    workflowId: 'edge-0123abcd',
    workspace: { name: 'edge', path: 'infra/edge' },
    playbook: 'site.yml',
    planDigest: PLAN,
    state: { lineage: '5f1c-lineage', serial: 3 },
    commit: { sha: '1'.repeat(40), repository: 'acme/infra' },
    workspaceDigest: 'b'.repeat(64),
    playbookDigest: 'd'.repeat(64),
    approval,
    builderId: 'https://github.com/acme/infra/actions/runs/7',
    startedOn: '2026-12-01T10:01:00.000Z',
    finishedOn: '2026-12-01T10:02:00.000Z',
    ...overrides,
  };
}

function evidence(overrides: Partial<ProvenanceEvidence> = {}): ProvenanceEvidence {
  return {
    workflowId: 'edge-0123abcd',
    workspace: { name: 'edge', path: 'infra/edge' },
    playbook: 'site.yml',
    approval,
    commit: '1'.repeat(40),
    state: { lineage: '5f1c-lineage', serial: 3 },
    ...overrides,
  };
}

const failed = (statement: ProvenanceStatement, proof: ProvenanceEvidence) =>
  verifyProvenance(statement, proof)
    .filter((c) => !c.ok)
    .map((c) => c.part);

describe('the provenance statement', () => {
  it('is an in-toto Statement v1 with the SLSA provenance v1 predicate', () => {
    const statement = buildProvenanceStatement(facts());
    expect(statement._type).toBe(STATEMENT_TYPE);
    expect(statement.predicateType).toBe(SLSA_PROVENANCE_V1);
    expect(statement.subject).toEqual([
      { name: 'plan', digest: { sha256: PLAN }, annotations: { workflow: 'edge-0123abcd' } },
      {
        name: 'state',
        digest: { sha256: stateDigest({ lineage: '5f1c-lineage', serial: 3 }) },
        annotations: { workspace: 'edge', lineage: '5f1c-lineage', serial: 3 },
      },
    ]);
    const dependencies = statement.predicate.buildDefinition.resolvedDependencies;
    expect(dependencies.map((d) => d.name)).toEqual(['commit', 'workspace', 'playbook', 'approval']);
    expect(dependencies[0]).toEqual({
      name: 'commit',
      digest: { gitCommit: '1'.repeat(40) },
      annotations: { repository: 'acme/infra' },
    });
    expect(dependencies[3]!.annotations).toEqual({
      state: 'approved',
      by: 'reviewer',
      at: approval.at,
      via: 'cli',
      planFingerprint: PLAN,
      configFingerprint: 'c'.repeat(64),
    });
    expect(statement.predicate.runDetails).toEqual({
      builder: { id: 'https://github.com/acme/infra/actions/runs/7' },
      metadata: {
        invocationId: 'edge-0123abcd',
        startedOn: '2026-12-01T10:01:00.000Z',
        finishedOn: '2026-12-01T10:02:00.000Z',
      },
    });
  });

  it('leaves out the commit when none is known, and a commit without a repository is not annotated', () => {
    const { commit: _omit, ...withoutCommit } = facts();
    expect(
      buildProvenanceStatement(withoutCommit).predicate.buildDefinition.resolvedDependencies.map((d) => d.name),
    ).toEqual(['workspace', 'playbook', 'approval']);
    const bare = buildProvenanceStatement(facts({ commit: { sha: 'f'.repeat(40) } }));
    expect(bare.predicate.buildDefinition.resolvedDependencies[0]).toEqual({
      name: 'commit',
      digest: { gitCommit: 'f'.repeat(40) },
    });
  });

  it('round-trips through its schema and the ledger record; a statement of another type is refused', () => {
    const statement = buildProvenanceStatement(facts());
    expect(provenanceStatementSchema.parse(JSON.parse(JSON.stringify(statement)))).toEqual(statement);
    expect(
      provenanceRecordSchema.safeParse({
        schemaVersion: 1,
        workflowId: 'x',
        statement,
        attestation: { outcome: 'maybe' },
      }).success,
    ).toBe(false);
    expect(
      provenanceStatementSchema.safeParse({ ...statement, _type: 'https://in-toto.io/Statement/v0.1' }).success,
    ).toBe(false);
    expect(
      provenanceStatementSchema.safeParse({ ...statement, predicateType: 'https://slsa.dev/provenance/v0.2' }).success,
    ).toBe(false);
    expect(provenanceStatementSchema.safeParse({ ...statement, subject: [{ name: 'plan', digest: {} }] }).success).toBe(
      false,
    );
  });
});

describe('digests', () => {
  it('the workspace digest depends on every path and content, not on the order files were listed', () => {
    const files = [
      { path: 'main.tf.json', content: '{}' },
      { path: 'vars.tf', content: 'variable "x" {}' },
    ];
    const digest = workspaceTreeDigest(files);
    expect(workspaceTreeDigest([...files].reverse())).toBe(digest);
    expect(workspaceTreeDigest([files[0]!, { path: 'other.tf', content: 'variable "x" {}' }])).not.toBe(digest);
    expect(workspaceTreeDigest([files[0]!, { path: 'vars.tf', content: 'variable "y" {}' }])).not.toBe(digest);
    expect(workspaceTreeDigest([files[0]!])).not.toBe(digest);
  });

  it('the state digest names one lineage and serial', () => {
    const digest = stateDigest({ lineage: 'l', serial: 1 });
    expect(stateDigest({ lineage: 'l', serial: 2 })).not.toBe(digest);
    expect(stateDigest({ lineage: 'm', serial: 1 })).not.toBe(digest);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the approval digest covers the decision, not the bookkeeping beside it', () => {
    const digest = approvalDigest(approval);
    expect(approvalDigest({ ...approval, planSummary: 'other', comment: 'lgtm' })).toBe(digest);
    for (const change of [
      { by: 'someone-else' },
      { state: 'rejected' as const },
      { at: '2026-12-02T00:00:00.000Z' },
      { via: 'environment' },
      { planFingerprint: 'e'.repeat(64) },
      { configFingerprint: undefined },
    ])
      expect(approvalDigest({ ...approval, ...change })).not.toBe(digest);
  });
});

describe('verifyProvenance', () => {
  const statement = buildProvenanceStatement(facts());

  it('passes every check against the ledger and state it was made from', () => {
    const checks = verifyProvenance(statement, evidence());
    expect(checks.map((c) => c.part)).toEqual([
      'workflow',
      'subject plan',
      'subject state',
      'material approval',
      'material commit',
      'material playbook',
      'material workspace',
    ]);
    expect(checks.every((c) => c.ok)).toBe(true);
  });

  it('names the state when the state moved on, or is gone', () => {
    expect(failed(statement, evidence({ state: { lineage: '5f1c-lineage', serial: 4 } }))).toEqual(['subject state']);
    expect(failed(statement, evidence({ state: { lineage: 'other', serial: 3 } }))).toEqual(['subject state']);
    expect(failed(statement, evidence({ state: undefined }))).toEqual(['subject state']);
    const detail = verifyProvenance(statement, evidence({ state: { lineage: '5f1c-lineage', serial: 4 } })).find(
      (c) => !c.ok,
    )!.detail;
    expect(detail).toMatch(/serial 3 .* serial 4/);
  });

  it('a workspace without state: no state subject, and verify wants none now', () => {
    const { state: _none, ...stateless } = facts();
    const own = buildProvenanceStatement(stateless);
    expect(own.subject.map((s) => s.name)).toEqual(['plan']);
    expect(failed(own, evidence({ state: undefined }))).toEqual([]);
    expect(failed(own, evidence())).toEqual(['subject state']);
  });

  it('names the state when the statement was edited to match another state', () => {
    const edited = structuredClone(statement);
    edited.subject[1]!.annotations = { workspace: 'edge', lineage: '5f1c-lineage', serial: 9 };
    expect(failed(edited, evidence({ state: { lineage: '5f1c-lineage', serial: 9 } }))).toEqual(['subject state']);
  });

  it('names the plan when its digest is not the approved plan', () => {
    const edited = structuredClone(statement);
    edited.subject[0]!.digest = { sha256: 'f'.repeat(64) };
    expect(failed(edited, evidence())).toEqual(['subject plan']);
    expect(failed(statement, evidence({ approval: { ...approval, planFingerprint: 'f'.repeat(64) } }))).toEqual([
      'subject plan',
      'material approval',
    ]);
  });

  it('without an approved plan, the plan digest is only required to be there', () => {
    const unbound: Approval = { required: false, state: 'not-required' };
    const own = buildProvenanceStatement(facts({ approval: unbound }));
    expect(failed(own, evidence({ approval: unbound }))).toEqual([]);
    expect(verifyProvenance(own, evidence({ approval: unbound }))[1]!.detail).toMatch(/no approval bound a plan/);
  });

  it('names the approval, the commit, the playbook and the workflow when they differ', () => {
    expect(failed(statement, evidence({ approval: { ...approval, by: 'mallory' } }))).toEqual(['material approval']);
    expect(failed(statement, evidence({ commit: '2'.repeat(40) }))).toEqual(['material commit']);
    expect(failed(statement, evidence({ playbook: 'other.yml' }))).toEqual(['material playbook']);
    expect(failed(statement, evidence({ workflowId: 'edge-ffffffff' }))).toEqual(['workflow']);
    expect(failed(statement, evidence({ workspace: { name: 'edge', path: 'elsewhere' } }))).toEqual(['workflow']);
  });

  it('a workflow that records no commit does not check one', () => {
    const { commit: _omit, ...noCommit } = evidence();
    expect(verifyProvenance(statement, noCommit).map((c) => c.part)).not.toContain('material commit');
  });

  it('names the materials a statement lacks', () => {
    const stripped = structuredClone(statement);
    stripped.predicate.buildDefinition.resolvedDependencies = [];
    expect(failed(stripped, evidence())).toEqual([
      'material approval',
      'material commit',
      'material playbook',
      'material workspace',
    ]);
  });
});
