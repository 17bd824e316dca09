/**
 * The root action end to end as the runner runs it (issue 4): a pull request
 * run that fails at ssh-wait, then a re-run of the same run (attempt 2) that
 * resumes — the sticky comment edited in place throughout, every secret kept
 * out of logs, outputs, summaries, comments and the ledger's history. Real
 * sshd host, real ansible-core, real git over smart HTTP, the tofu stand-in.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events, RunnerJob, type ActionResult } from '../support/action-runner.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import {
  BOT,
  chainInputs,
  createActionFixture,
  describeRun,
  logWithoutMaskCommands,
  READ_TOKEN,
  REPOSITORY,
  WRITE_TOKEN,
  type ActionFixture,
} from './helpers.js';

const PR = 21;
const RUN_ID = 9001;
const ID = `edge-${RUN_ID}`;
const sealKey = 'actions-seal-key-0123456789abcdef';
const runSecret = 'run secret with spaces, "quotes" and $dollar';

describe('the root action on a pull request: failure, re-run, resume', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let first: ActionResult;
  let second: ActionResult;
  const posts: Array<{ post: ActionResult | undefined; api: number; git: number }> = [];
  let foreignCommentId: number;
  const foreignBody = `<!-- exocomp:workflow=${ID} -->\nI copied the marker; leave me alone.`;

  beforeAll(async () => {
    fx = await createActionFixture('sealed');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2222 });
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({
        ansible_inventory: {
          all: { hosts: { web: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
        },
      }),
    );
    fx.double.state.issues[PR] = { pullRequest: true };
    foreignCommentId = fx.double.addComment(PR, 'mallory', foreignBody).id;
    const inputs = await chainInputs(fx, {
      'ssh-wait': '3s',
      'seal-key': sealKey,
      'run-secrets': `GREETING: ${JSON.stringify(runSecret)}\n`,
    });
    const event = events.pullRequest(REPOSITORY, PR, 'alice');
    // Attempt 1: the host is down, so ssh-wait fails after the apply. Each attempt is a job with its post step.
    for (const attempt of [1, 2]) {
      const job = await RunnerJob.start();
      try {
        if (attempt === 2) await host.start();
        const main = await fx.run('provision', {
          runId: RUN_ID,
          runAttempt: attempt,
          event,
          with: inputs,
          runnerJob: job,
        });
        const before = { api: fx.double.requests.length, git: fx.double.gitRequests.length };
        const post = await job.post(main);
        posts.push({
          post,
          api: fx.double.requests.length - before.api,
          git: fx.double.gitRequests.length - before.git,
        });
        if (attempt === 1) first = main;
        else second = main;
      } finally {
        await job.close();
      }
    }
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('fails the first attempt at ssh-wait, naming the host, after one apply', async () => {
    expect(first.code, describeRun(first)).toBe(1);
    expect(first.outputs.state).toBe('provision-failed');
    expect(first.stdout).toMatch(/::error::ssh-wait failed/);
    expect(first.stdout).toContain(host.address);
    expect(await fx.applyCount()).toBe(1);
  });

  it('resumes on the re-run (attempt 2): apply is skipped, the rest runs', async () => {
    expect(second.code, describeRun(second)).toBe(0);
    expect(second.outputs.state).toBe('provisioned');
    expect(second.stdout).toContain('1/4 apply: skipped (already succeeded)');
    expect(await fx.applyCount()).toBe(1);
    const steps = JSON.parse(second.outputs.steps!) as Array<{ name: string; state: string; attempts: number }>;
    expect(steps.map((s) => [s.name, s.state, s.attempts])).toEqual([
      ['apply', 'succeeded', 1],
      ['ssh-wait', 'succeeded', 2],
      ['onboard', 'succeeded', 1],
      ['configure', 'succeeded', 1],
    ]);
    expect(second.outputs.inventory).toBe('tf:edge');
    expect(JSON.parse(second.outputs.hosts!)).toEqual([{ name: 'web', address: host.address, port: 2222 }]);
    expect(await host.readFile('/tmp/exocomp-configured-web')).toContain(`greeting=${runSecret}`);
  });

  it('keeps one sticky comment, created once and edited in place; the look-alike by another author is untouched', async () => {
    const comments = fx.double.commentsOn(PR);
    const ours = comments.filter((c) => c.author === BOT);
    expect(ours).toHaveLength(1);
    expect(ours[0]!.body).toContain(`<!-- exocomp:workflow=${ID} -->`);
    expect(ours[0]!.body).toContain('provisioned');
    expect(comments.find((c) => c.id === foreignCommentId)?.body).toBe(foreignBody);
    expect(fx.double.requestsTo('POST /repos/{owner}/{repo}/issues/{issue_number}/comments')).toHaveLength(1);
    const edits = fx.double.requestsTo('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}');
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(edits.every((request) => request.params.comment_id === String(ours[0]!.id))).toBe(true);
    expect(fx.double.violations).toEqual([]);
  });

  it('runs the post step after each attempt, which finds every step recorded and does nothing: no ledger, no API, no failure', () => {
    expect(posts).toHaveLength(2);
    for (const { post, api, git } of posts) {
      expect(post, 'the root action declares a post step').toBeDefined();
      expect(post!.code, describeRun(post!)).toBe(0);
      expect([api, git]).toEqual([0, 0]);
      expect(post!.annotations).toEqual([]);
      expect(post!.log.trim()).toBe('');
    }
  });

  it('writes the ledger view into the job summary, with run links and attempts', () => {
    expect(second.summary).toContain(`exocomp workflow \`${ID}\` — provisioned`);
    expect(second.summary).toContain(`run ${RUN_ID} attempt 2`);
    expect(first.summary).toContain('provision-failed');
  });

  it('keeps every secret out of logs (but the mask commands), outputs, summaries, comments and every ledger commit', async () => {
    const state = JSON.parse(await readFile(join(fx.workspace, 'terraform.tfstate'), 'utf8')) as {
      outputs: Record<string, { value: string }>;
    };
    const dbPassword = state.outputs.db_password!.value;
    const fleetKeyLine = (await readFile(fx.fleet.privateKeyPath, 'utf8')).split('\n')[1]!;
    const bootstrapKeyLine = (await readFile(fx.bootstrap.privateKeyPath, 'utf8')).split('\n')[1]!;
    const basicAuth = Buffer.from(`x-access-token:${WRITE_TOKEN}`).toString('base64');
    const secrets = { dbPassword, fleetKeyLine, bootstrapKeyLine, sealKey, runSecret, token: WRITE_TOKEN, basicAuth };
    for (const value of Object.values(secrets)) expect(value.length).toBeGreaterThan(8);

    const masked = `${first.stdout}\n${second.stdout}`;
    for (const value of [sealKey, WRITE_TOKEN, basicAuth, fleetKeyLine])
      expect(masked).toContain(`::add-mask::${value}`);
    const sentComments = fx.double.requests
      .filter((request) => request.route?.includes('/comments') && request.method !== 'GET')
      .map((request) => JSON.stringify(request.body));
    expect(sentComments.length).toBeGreaterThanOrEqual(2);
    const history = await fx.ledgerHistory();
    expect(history).toContain('sealed/edge.json');
    const places: Record<string, string> = {
      logs: [first, second].map(logWithoutMaskCommands).join('\n'),
      outputs: [first, second].map((r) => r.files.GITHUB_OUTPUT).join('\n'),
      summaries: `${first.summary}\n${second.summary}`,
      comments: sentComments.join('\n'),
      ledger: history,
    };
    for (const [place, text] of Object.entries(places)) {
      for (const [name, value] of Object.entries(secrets))
        expect(text.includes(value), `${name} in ${place}`).toBe(false);
    }
  });
});

describe('without contents: write', () => {
  let fx: ActionFixture;
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    fx.double.state.issues[PR] = { pullRequest: true };
  });
  afterAll(async () => fx?.cleanup());

  it('fails before any side effect, naming the permission to add', async () => {
    const result = await fx.run('provision', {
      token: READ_TOKEN,
      event: events.pullRequest(REPOSITORY, PR, 'alice'),
      with: await chainInputs(fx),
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('add `permissions: contents: write` to the job');
    expect(await fx.ledgerHistory()).toBe('');
    expect(await fx.applyCount()).toBe(0);
    expect(await readFile(fx.standinLog, 'utf8').catch(() => '')).toBe('');
    expect(fx.double.requests).toEqual([]);
    expect(
      fx.double.gitRequests.filter((request) => request.service === 'git-receive-pack' && request.status === 200),
    ).toEqual([]);
  });

  it('still previews a plan for a pull request from a fork: summary, and a notice instead of the comment', async () => {
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: {} } } }),
    );
    const result = await fx.run('plan', {
      token: READ_TOKEN,
      actor: 'outsider',
      event: events.pullRequest(REPOSITORY, PR, 'outsider', { fork: true }),
      with: {
        workspace: 'infra/edge',
        'workspace-name': 'edge',
        'tofu-binary': (await chainInputs(fx))['tofu-binary']!,
        'plan-only': 'true',
      },
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs['plan-summary']).toBe('+1 ~0 -0');
    expect(result.summary).toContain('+ 1 to add, ~ 0 to change, − 0 to destroy');
    expect(result.stdout).toMatch(/::notice::.*job summary/);
    expect(fx.double.commentsOn(PR)).toEqual([]);
    expect(await fx.ledgerHistory()).toBe('');
    expect(fx.double.violations).toEqual([]);
  });
});
