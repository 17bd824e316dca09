/**
 * Tofu state that survives the runner (issue 13, item 1): in CI a workspace
 * with the local backend is refused before anything is recorded or applied,
 * with a remote backend example; `allow-local-state: true` lets it through
 * with a warning.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActionFixture, describeRun, planInputs, type ActionFixture } from './helpers.js';

describe('a workspace whose state would stay on the runner', () => {
  let fx: ActionFixture;

  beforeAll(async () => {
    // No ansible_inventory output: the apply names no hosts, so no SSH host is needed to see it pass.
    fx = await createActionFixture('no-inventory');
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('is refused in CI, with a remote backend block and how to pass its credentials; nothing recorded or applied', async () => {
    const { 'allow-local-state': _allowed, ...inputs } = planInputs();
    const result = await fx.run('provision', { runId: 4101, with: inputs });
    expect(result.code, describeRun(result)).not.toBe(0);
    const error = result.annotations.find((a) => a.level === 'error');
    expect(error?.message, describeRun(result)).toMatch(/keeps its OpenTofu state on this runner/);
    expect(result.log).toContain('backend "s3"');
    expect(result.log).toContain('AWS_ACCESS_KEY_ID');
    expect(result.log).toContain('allow-local-state: true');
    expect(await fx.ledgerHistory()).not.toContain('workflows/');
    expect(await fx.applyCount()).toBe(0);
  });

  it('is applied with allow-local-state: true, with a warning', async () => {
    const result = await fx.run('provision', { runId: 4102, with: planInputs() });
    const warning = result.annotations.find(
      (a) => a.level === 'warning' && /keeps its state on this runner/.test(a.message),
    );
    expect(warning, describeRun(result)).toBeDefined();
    expect(await fx.applyCount()).toBe(1);
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-4102.json'))!);
    expect(record.steps[0]).toMatchObject({ name: 'apply', state: 'succeeded' });
  });
});
