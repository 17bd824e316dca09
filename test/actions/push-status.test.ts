/**
 * Sticky status on push events (issue 10 item 6): the pushed commit's pull
 * request is found through GET /repos/{owner}/{repo}/commits/{sha}/pulls (the
 * double checks it against GitHub's OpenAPI description) and its sticky comment
 * is written; a commit without one gets a notice instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOT, createActionFixture, describeRun, nameWebHost, planInputs, type ActionFixture } from './helpers.js';

const SHA = '0123456789abcdef0123456789abcdef01234567';
const ROUTE = 'GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls';

describe('status of a push', () => {
  let fx: ActionFixture;
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    await nameWebHost(fx, '127.0.0.1');
  });
  afterAll(async () => fx?.cleanup());

  it('writes the sticky comment on the pull request of the pushed commit', async () => {
    fx.double.state.issues[52] = { pullRequest: true, state: 'closed', closedAt: '2026-01-02T00:00:00Z' };
    fx.double.state.issues[53] = { pullRequest: true };
    fx.double.state.commitPulls[SHA] = [52, 53];
    const result = await fx.run('plan', { runId: 8100, with: planInputs() });
    expect(result.code, describeRun(result)).toBe(0);
    const ours = fx.double.commentsOn(53).filter((c) => c.author === BOT);
    expect(ours).toHaveLength(1);
    expect(ours[0]!.body).toContain('<!-- exocomp:workflow=edge-8100 -->');
    expect(fx.double.commentsOn(52)).toEqual([]);
    expect(fx.double.requestsTo(ROUTE)).toHaveLength(1);
    expect(fx.double.violations).toEqual([]);
  });

  it('says so in a notice when the commit belongs to no pull request', async () => {
    fx.double.state.commitPulls[SHA] = [];
    const result = await fx.run('plan', { runId: 8101, with: planInputs() });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.annotations).toContainEqual(
      expect.objectContaining({ level: 'notice', message: expect.stringContaining('belongs to no pull request') }),
    );
    expect(fx.double.violations).toEqual([]);
  });
});
