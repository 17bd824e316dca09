/**
 * Issue 27, item 3 on the emulated runner: `attest: true` without an id-token
 * makes no attestation and a notice says why; with one, a failing attestation
 * (here the id-token endpoint refuses, on loopback) is a warning and a record,
 * never a failed apply.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActionFixture, describeRun, planInputs, type ActionFixture } from './helpers.js';

/** A loopback port nothing listens on: taken, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('provision with attest: true', () => {
  let fx: ActionFixture;

  beforeAll(async () => {
    // No ansible_inventory output: the apply names no hosts, so no SSH host is needed.
    fx = await createActionFixture('no-inventory');
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('without an id-token: applied, a notice says why no attestation was made, and the provenance records it', async () => {
    const result = await fx.run('provision', { runId: 4201, with: { ...planInputs(), attest: 'true' } });
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-4201.json'))!);
    expect(record.steps[0], describeRun(result)).toMatchObject({ name: 'apply', state: 'succeeded' });
    const notice = result.annotations.find((a) => a.level === 'notice' && /id-token/.test(a.message));
    expect(notice?.message, describeRun(result)).toMatch(/permissions: id-token: write/);
    const provenance = JSON.parse((await fx.ledgerFile('provenance/edge-4201.json'))!);
    expect(provenance.statement.subject[0]).toMatchObject({ name: 'plan', digest: { sha256: expect.any(String) } });
    expect(provenance.attestation).toMatchObject({ outcome: 'not-attempted', reason: notice!.message });
  });

  it('with an id-token whose endpoint fails: applied, warned, and recorded as failed', async () => {
    const env = {
      ACTIONS_ID_TOKEN_REQUEST_URL: `http://127.0.0.1:${await closedPort()}/token?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'id-token-request-token',
    };
    const result = await fx.run('provision', { runId: 4202, with: { ...planInputs(), attest: 'true' }, env });
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-4202.json'))!);
    expect(record.steps[0], describeRun(result)).toMatchObject({ name: 'apply', state: 'succeeded' });
    const warning = result.annotations.find((a) => a.level === 'warning' && /not attested/.test(a.message));
    expect(warning, describeRun(result)).toBeDefined();
    const provenance = JSON.parse((await fx.ledgerFile('provenance/edge-4202.json'))!);
    expect(provenance.attestation).toMatchObject({ outcome: 'failed' });
  });
});
