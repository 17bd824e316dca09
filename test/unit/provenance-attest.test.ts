/** Issue 27, item 3: the apply's statement attested on GitHub with an id-token; never failing the apply. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AttestOptions } from '@actions/attest';
import { provenanceOfApply } from '../../src/app/provision/provenance.js';
import type { ProvenanceAttestation } from '../../src/app/ports/attestor.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { githubAttestation, NO_ID_TOKEN } from '../../src/platform/github/attest.js';
import { readRunContext } from '../../src/platform/github/run-context.js';
import { sampleWorkflow } from '../support/workflows.js';

const now = new Date('2026-12-01T12:00:00Z');
const app: AppContext = {
  store: new MemoryLedgerStore(),
  ledgerBranch: 'exocomp-ledger',
  now: () => now,
  cwd: '/nonexistent',
  env: {},
  progress: new RecordingProgress(),
};
const applied = {
  planDigest: 'a'.repeat(64),
  state: { lineage: 'lineage-1', serial: 2 },
  materials: { workspaceDigest: 'b'.repeat(64), playbookDigest: 'c'.repeat(64) },
};

/** The runner's variables, as GitHub sets them; `permissions: id-token: write` adds the id-token request URL. */
function runContext(idToken: boolean) {
  const payload = join(mkdtempSync(join(tmpdir(), 'exocomp-attest-')), 'event.json');
  writeFileSync(payload, '{}');
  return readRunContext(
    {
      GITHUB_REPOSITORY: 'acme/infra',
      GITHUB_RUN_ID: '42',
      GITHUB_ACTOR: 'octocat',
      GITHUB_EVENT_NAME: 'push',
      GITHUB_EVENT_PATH: payload,
      ...(idToken
        ? { ACTIONS_ID_TOKEN_REQUEST_URL: 'http://127.0.0.1:1/token', ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'x' }
        : {}),
    },
    '/tmp',
  );
}

function collect() {
  const said: { info: string[]; warn: string[] } = { info: [], warn: [] };
  return { said, say: { info: (m: string) => said.info.push(m), warn: (m: string) => said.warn.push(m) } };
}

describe('attesting on GitHub', () => {
  it('with an id-token, signs the statement as built: its subjects, predicate type and predicate', async () => {
    const calls: AttestOptions[] = [];
    const sign = async (options: AttestOptions) => {
      calls.push(options);
      // What attest() really returns: the integer id GitHub answers (its types say string).
      return { attestationID: 981 };
    };
    const notices: string[] = [];
    const { attestation } = githubAttestation(
      runContext(true),
      { asked: true, token: 'ghs_token', loadSign: async () => sign },
      (m) => notices.push(m),
    );
    const { said, say } = collect();
    const record = await provenanceOfApply(app, sampleWorkflow('edge-1'), applied, attestation, say);
    expect(calls).toEqual([
      {
        subjects: record.statement.subject,
        predicateType: 'https://slsa.dev/provenance/v1',
        predicate: record.statement.predicate,
        token: 'ghs_token',
      },
    ]);
    expect(calls[0]!.subjects!.map((s) => s.digest)).toEqual([
      { sha256: 'a'.repeat(64) },
      { sha256: record.statement.subject[1]!.digest.sha256 },
    ]);
    expect(record.attestation).toEqual({
      outcome: 'attested',
      at: now.toISOString(),
      id: '981',
      url: 'https://github.com/acme/infra/attestations/981',
    });
    expect(notices).toEqual([]);
    expect(said.info).toEqual(['provenance attested (attestation 981)']);
  });

  it('without an id-token, makes no call: a notice says why, and the record keeps it', async () => {
    const notices: string[] = [];
    let loaded = false;
    const { attestation } = githubAttestation(
      runContext(false),
      {
        asked: true,
        token: 't',
        loadSign: async () => {
          loaded = true;
          throw new Error('not to be loaded');
        },
      },
      (m) => notices.push(m),
    );
    expect(notices).toEqual([NO_ID_TOKEN]);
    expect(NO_ID_TOKEN).toMatch(/id-token: write/);
    const record = await provenanceOfApply(app, sampleWorkflow('edge-1'), applied, attestation, collect().say);
    expect(record.attestation).toEqual({ outcome: 'not-attempted', reason: NO_ID_TOKEN });
    expect(loaded).toBe(false);
  });

  it('not asked: nothing is attested and nothing said', async () => {
    const notices: string[] = [];
    const asked = githubAttestation(runContext(true), { asked: false, token: 't', loadSign: async () => sign }, (m) =>
      notices.push(m),
    );
    expect(asked).toEqual({});
    expect(notices).toEqual([]);
    const record = await provenanceOfApply(app, sampleWorkflow('edge-1'), applied, undefined, collect().say);
    expect(record.attestation).toBeUndefined();
    async function sign(): Promise<{ attestationID?: string }> {
      return {};
    }
  });

  it('a failed attestation is warned and recorded; the provenance is still returned for the step to write', async () => {
    const failing: ProvenanceAttestation = {
      attestor: {
        attest: async () => {
          throw new Error('Failed to persist attestation: Resource not accessible by integration');
        },
      },
    };
    const { said, say } = collect();
    const record = await provenanceOfApply(app, sampleWorkflow('edge-1'), applied, failing, say);
    expect(record.attestation).toMatchObject({ outcome: 'failed', at: now.toISOString() });
    expect(record.attestation).toHaveProperty('reason', expect.stringContaining('Resource not accessible'));
    expect(said.warn).toEqual([expect.stringMatching(/^the apply succeeded, but its provenance was not attested: /)]);
    expect(record.statement.subject[0]!.digest.sha256).toBe('a'.repeat(64));
  });
});
