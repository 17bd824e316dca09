import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { ExocompError } from '../../src/domain/errors.js';
import { createGitHub } from '../../src/platform/github/octokit.js';
import type { GitHubPort, RepoRef } from '../../src/platform/github/port.js';
import {
  gitAuthHeader,
  PERMISSIVE_TOKEN,
  SECONDARY_RATE_LIMIT,
  startGitHubDouble,
  type GitHubDouble,
} from '../support/github-double.js';
import { OpenApiSubset } from '../support/openapi.js';

const WRITE_TOKEN = 'ghs_writeTokenForTests0001';
const READ_TOKEN = 'ghs_readOnlyTokenForTests02';
const NO_ACTIONS_TOKEN = 'ghs_noActionsTokenForTests3';
const REPO: RepoRef = { owner: 'acme', repo: 'infra' };

let scratch: string;
let double: GitHubDouble;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'exocomp-github-double-'));
  double = await startGitHubDouble({ repository: 'acme/infra', gitRoot: join(scratch, 'git') });
});

afterAll(async () => {
  await double.close();
  await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  double.state.tokens[WRITE_TOKEN] = { login: 'github-actions[bot]', permissions: { ...PERMISSIVE_TOKEN } };
  double.state.tokens[READ_TOKEN] = {
    login: 'github-actions[bot]',
    permissions: { actions: 'read', contents: 'read', issues: 'read', 'pull-requests': 'read' },
  };
  double.state.tokens[NO_ACTIONS_TOKEN] = {
    login: 'github-actions[bot]',
    permissions: { contents: 'write', 'pull-requests': 'write' },
  };
});

function client(token: string): GitHubPort {
  return createGitHub({ token, baseUrl: double.url, userAgent: 'exocomp-tests' });
}

async function refusal(promise: Promise<unknown>): Promise<ExocompError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ExocompError);
  return error as ExocompError;
}

describe('the octokit adapter against the GitHub double', () => {
  it('reads run approvals, leaving pending reviews out', async () => {
    double.state.approvals[4242] = [
      { state: 'approved', user: 'alice', environments: ['production'], comment: 'ship it' },
      { state: 'rejected', user: 'bob', environments: ['production', 'eu'] },
      { state: 'pending', user: 'carol', environments: ['production'] },
    ];
    const start = double.violations.length;

    const approvals = await client(WRITE_TOKEN).listRunApprovals(REPO, 4242);

    expect(approvals).toEqual([
      { state: 'approved', user: 'alice', environments: ['production'], comment: 'ship it' },
      { state: 'rejected', user: 'bob', environments: ['production', 'eu'], comment: '' },
    ]);
    expect(await client(WRITE_TOKEN).listRunApprovals(REPO, 1)).toEqual([]);
    expect(double.violations.slice(start)).toEqual([]);
  });

  it('tells whether an environment requires reviewers and prevents self-review, and undefined when it does not exist', async () => {
    double.state.environments.production = {
      requiredReviewers: ['alice'],
      preventSelfReview: true,
      waitTimerMinutes: 5,
    };
    double.state.environments.staging = { waitTimerMinutes: 1 };
    double.state.environments['env/with slash'] = {};
    const github = client(WRITE_TOKEN);

    expect(await github.environmentProtection(REPO, 'production')).toEqual({
      requiredReviewers: true,
      preventSelfReview: true,
    });
    double.state.environments.production = { requiredReviewers: ['alice'] };
    expect(await github.environmentProtection(REPO, 'production')).toEqual({
      requiredReviewers: true,
      preventSelfReview: false,
    });
    expect(await github.environmentProtection(REPO, 'staging')).toEqual({
      requiredReviewers: false,
      preventSelfReview: false,
    });
    expect(await github.environmentProtection(REPO, 'env/with slash')).toEqual({
      requiredReviewers: false,
      preventSelfReview: false,
    });
    expect(await github.environmentProtection(REPO, 'missing')).toBeUndefined();
    expect(double.violations).toEqual([]);
  });

  it('reads collaborator permissions, keeping maintain and triage apart from write and read', async () => {
    Object.assign(double.state.collaborators, {
      alice: 'admin',
      bob: 'maintain',
      carol: 'write',
      dave: 'triage',
      erin: 'read',
    });
    const github = client(READ_TOKEN);

    const read = async (login: string) => github.collaboratorPermission(REPO, login);
    expect(await read('alice')).toBe('admin');
    expect(await read('bob')).toBe('maintain');
    expect(await read('carol')).toBe('write');
    expect(await read('dave')).toBe('triage');
    expect(await read('erin')).toBe('read');
    expect(await read('mallory')).toBe('none');
    expect(double.violations).toEqual([]);
  });

  it('lists every comment of a pull request across pages', async () => {
    double.state.issues[7] = { pullRequest: true };
    double.state.issues[8] = { pullRequest: false };
    for (let index = 0; index < 205; index += 1)
      double.addComment(7, index % 2 ? 'alice' : 'github-actions[bot]', `comment ${index}`);
    double.addComment(8, 'alice', 'on another issue');
    const before = double.requestsTo('GET /repos/{owner}/{repo}/issues/{issue_number}/comments').length;

    const comments = await client(READ_TOKEN).listIssueComments(REPO, 7);

    expect(comments).toHaveLength(205);
    expect(comments.map((comment) => comment.body)).toEqual(
      Array.from({ length: 205 }, (_, index) => `comment ${index}`),
    );
    expect(comments[1]?.author).toBe('alice');
    expect(comments[0]?.author).toBe('github-actions[bot]');
    expect(double.requestsTo('GET /repos/{owner}/{repo}/issues/{issue_number}/comments').length - before).toBe(3);
    expect(double.violations).toEqual([]);
  });

  it('creates a comment authored by the token’s identity and edits it in place', async () => {
    double.state.issues[12] = { pullRequest: true };
    const github = client(WRITE_TOKEN);

    const created = await github.createIssueComment(REPO, 12, '<!-- exocomp:wf-1 -->\nplanning');
    expect(created).toMatchObject({ body: '<!-- exocomp:wf-1 -->\nplanning', author: 'github-actions[bot]' });
    const updated = await github.updateIssueComment(REPO, created.id, '<!-- exocomp:wf-1 -->\napplied');

    expect(updated).toEqual({
      id: created.id,
      body: '<!-- exocomp:wf-1 -->\napplied',
      author: 'github-actions[bot]',
      // Where the comment is read: what the apply environment's url points at (issue 25).
      htmlUrl: `${double.url}/${REPO.owner}/${REPO.repo}/issues/12#issuecomment-${created.id}`,
    });
    expect(double.commentsOn(12)).toMatchObject([
      { id: created.id, author: 'github-actions[bot]', body: '<!-- exocomp:wf-1 -->\napplied' },
    ]);
    const [patch] = double.requestsTo('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}');
    expect(patch).toMatchObject({
      login: 'github-actions[bot]',
      params: { comment_id: String(created.id) },
      status: 200,
    });
    expect(patch?.userAgent).toContain('exocomp-tests');
    expect(double.violations).toEqual([]);
  });

  it('dispatches a workflow with its inputs, and gets the run it started (return_run_details)', async () => {
    double.state.workflows['provision.yml'] = { id: 901, workflowDispatch: true, inputs: ['workflow-id', 'continue'] };

    const started = await client(WRITE_TOKEN).dispatchWorkflow(REPO, 'provision.yml', 'main', {
      'workflow-id': 'wf-9',
      continue: 'apply',
    });

    const runId = double.state.dispatches.at(-1)!.runId;
    expect(double.state.dispatches).toEqual([
      {
        workflow: 'provision.yml',
        ref: 'main',
        inputs: { 'workflow-id': 'wf-9', continue: 'apply' },
        login: 'github-actions[bot]',
        runId,
      },
    ]);
    expect(started).toEqual({ runId, htmlUrl: `${double.url}/acme/infra/actions/runs/${runId}` });
    const [request] = double
      .requestsTo('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches')
      .slice(-1);
    expect(request).toMatchObject({ status: 200, body: { ref: 'main', return_run_details: true } });
    expect(await client(READ_TOKEN).getWorkflowRun(REPO, runId)).toMatchObject({ id: runId, status: 'queued' });
    expect(double.violations).toEqual([]);
  });

  it.each(['ignores', 'refuses'] as const)(
    'dispatches once, naming no run, on a server that %s return_run_details (GitHub Enterprise Server)',
    async (support) => {
      double.state.workflows['provision.yml'] = { id: 901, workflowDispatch: true, inputs: ['workflow-id'] };
      double.state.runDetails = support;
      const before = double.state.dispatches.length;
      try {
        expect(
          await client(WRITE_TOKEN).dispatchWorkflow(REPO, 'provision.yml', 'main', { 'workflow-id': 'wf-10' }),
        ).toBeUndefined();
      } finally {
        double.state.runDetails = 'returns';
      }
      expect(double.state.dispatches.slice(before)).toMatchObject([
        { workflow: 'provision.yml', inputs: { 'workflow-id': 'wf-10' } },
      ]);
      const statuses = double
        .requestsTo('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches')
        .map((r) => r.status);
      expect(statuses.slice(support === 'refuses' ? -2 : -1)).toEqual(support === 'refuses' ? [422, 204] : [204]);
      expect(double.violations).toEqual([]);
    },
  );

  it('reads a workflow run, and undefined for a run that does not exist', async () => {
    double.state.runs[5150] = { status: 'completed', conclusion: 'failure', runAttempt: 2 };
    double.state.runs[5151] = { status: 'in_progress' };
    const github = client(READ_TOKEN);

    expect(await github.getWorkflowRun(REPO, 5150)).toEqual({
      id: 5150,
      runAttempt: 2,
      status: 'completed',
      conclusion: 'failure',
      htmlUrl: `${double.url}/acme/infra/actions/runs/5150`,
    });
    expect(await github.getWorkflowRun(REPO, 5151)).toMatchObject({
      status: 'in_progress',
      conclusion: null,
      runAttempt: 1,
    });
    expect(await github.getWorkflowRun(REPO, 999)).toBeUndefined();
    expect(double.violations).toEqual([]);
  });
});

describe('rate limits', () => {
  const RUN_ROUTE = 'GET /repos/{owner}/{repo}/actions/runs/{run_id}';

  it('waits out a secondary rate limit and retries, a bounded number of times', async () => {
    double.state.runs[600] = { status: 'completed', conclusion: 'success' };
    const warnings: string[] = [];
    const github = createGitHub({
      token: READ_TOKEN,
      baseUrl: double.url,
      onWarning: (message) => warnings.push(message),
    });

    double.failNext(RUN_ROUTE, SECONDARY_RATE_LIMIT, 2);
    expect(await github.getWorkflowRun(REPO, 600)).toMatchObject({ id: 600, conclusion: 'success' });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('retrying');

    double.failNext(RUN_ROUTE, SECONDARY_RATE_LIMIT, 3);
    const before = double.requestsTo(RUN_ROUTE).length;
    const error = await refusal(github.getWorkflowRun(REPO, 600));
    expect(double.requestsTo(RUN_ROUTE).length - before).toBe(3);
    expect(error.message).toContain('secondary rate limit');
    expect(warnings.at(-1)).toContain('giving up');
    expect(double.violations).toEqual([]);
  });
});

describe('refusals become permission errors that name the permission to add', () => {
  it('comments without pull-requests: write', async () => {
    double.state.issues[21] = { pullRequest: true };
    const error = await refusal(client(READ_TOKEN).createIssueComment(REPO, 21, 'hello'));

    expect(error.kind).toBe('permission');
    expect(error.message).toContain('403');
    expect(error.message).toContain('Resource not accessible by integration');
    expect(error.help).toContain('pull-requests: write');
    expect(`${error.message} ${error.help}`).not.toContain(READ_TOKEN);
    expect(double.commentsOn(21)).toEqual([]);
  });

  it('reading approvals, environments and runs without actions: read', async () => {
    double.state.environments.production = { requiredReviewers: ['alice'] };
    double.state.runs[77] = { status: 'queued' };
    const github = client(NO_ACTIONS_TOKEN);

    for (const attempt of [
      github.listRunApprovals(REPO, 77),
      github.environmentProtection(REPO, 'production'),
      github.getWorkflowRun(REPO, 77),
    ]) {
      const error = await refusal(attempt);
      expect(error.kind).toBe('permission');
      expect(error.help).toContain('actions: read');
      expect(`${error.message} ${error.help}`).not.toContain(NO_ACTIONS_TOKEN);
    }
  });

  it('dispatching without actions: write', async () => {
    double.state.workflows['provision.yml'] = { id: 901, workflowDispatch: true };
    const dispatched = double.state.dispatches.length;

    const error = await refusal(client(READ_TOKEN).dispatchWorkflow(REPO, 'provision.yml', 'main', {}));

    expect(error.kind).toBe('permission');
    expect(error.help).toContain('actions: write');
    expect(double.state.dispatches).toHaveLength(dispatched);
  });

  it('a bad token and an unknown repository', async () => {
    const bad = await refusal(client('ghs_notARealToken000').listIssueComments(REPO, 7));
    expect(bad.kind).toBe('permission');
    expect(bad.message).toContain('401');
    expect(bad.message).not.toContain('ghs_notARealToken000');

    const hidden = await refusal(client(WRITE_TOKEN).listRunApprovals({ owner: 'acme', repo: 'secret' }, 1));
    expect(hidden.kind).toBe('permission');
    expect(hidden.message).toContain('404');
    expect(hidden.help).toContain('actions: read');
  });

  it('GitHub’s 422s: a workflow without workflow_dispatch, an overlong comment', async () => {
    double.state.workflows['nightly.yml'] = { id: 902, workflowDispatch: false };
    double.state.issues[30] = { pullRequest: true };
    const github = client(WRITE_TOKEN);

    const notDispatchable = await refusal(github.dispatchWorkflow(REPO, 'nightly.yml', 'main', {}));
    expect(notDispatchable.kind).toBe('tool-failed');
    expect(notDispatchable.message).toContain("Workflow does not have 'workflow_dispatch' trigger");
    expect(notDispatchable.help).toContain('workflow_dispatch');

    const tooLong = await refusal(github.createIssueComment(REPO, 30, 'x'.repeat(65_537)));
    expect(tooLong.kind).toBe('tool-failed');
    expect(tooLong.message).toContain('Validation Failed');
    expect(double.commentsOn(30)).toEqual([]);
    expect(double.violations).toEqual([]);
  });

  it('an unreachable API is an error that names the URL, not the token', async () => {
    const closed = await startGitHubDouble();
    const url = closed.url;
    await closed.close();

    const error = await refusal(createGitHub({ token: WRITE_TOKEN, baseUrl: url, retries: 0 }).getWorkflowRun(REPO, 1));
    expect(error.kind).toBe('tool-failed');
    expect(error.message).toContain(url);
    expect(error.message).not.toContain(WRITE_TOKEN);
  });
});

describe('an API that stops answering', () => {
  it('costs the retries once: later calls of the job try once, until one gets through', async () => {
    let answering = false;
    let requests = 0;
    const server = createServer((request, response) => {
      requests += 1;
      if (!answering) return request.socket.destroy();
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const github = createGitHub({
      token: WRITE_TOKEN,
      baseUrl: `http://127.0.0.1:${port}`,
      retries: 2,
      retryBaseMs: 5,
    });
    const attempts = async (call: () => Promise<unknown>) => {
      const before = requests;
      await call().catch(() => undefined);
      return requests - before;
    };
    try {
      expect(await attempts(() => github.getWorkflowRun(REPO, 1))).toBe(3);
      expect(await attempts(() => github.getWorkflowRun(REPO, 1))).toBe(1);
      answering = true;
      expect(await github.getWorkflowRun(REPO, 1)).toBeUndefined();
      answering = false;
      expect(await attempts(() => github.getWorkflowRun(REPO, 1))).toBe(3);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the double validates what it receives and returns', () => {
  const post = (path: string, body: string) =>
    fetch(`${double.url}${path}`, {
      method: 'POST',
      headers: { authorization: `token ${WRITE_TOKEN}`, 'content-type': 'application/json' },
      body,
    });

  it('records a malformed request body as a violation and refuses it', async () => {
    double.state.issues[40] = { pullRequest: true };
    double.violations.length = 0;

    const response = await post('/repos/acme/infra/issues/40/comments', JSON.stringify({ body: 42 }));

    expect(response.status).toBe(422);
    expect(double.violations).toEqual([
      expect.objectContaining({ phase: 'request', message: 'request body.body: expected string, got integer 42' }),
    ]);
    expect(double.commentsOn(40)).toEqual([]);
    double.violations.length = 0;
  });

  it('records a dispatch without ref, a bad path parameter, non-JSON and an unknown endpoint', async () => {
    double.violations.length = 0;

    await post('/repos/acme/infra/actions/workflows/provision.yml/dispatches', JSON.stringify({ inputs: {} }));
    await fetch(`${double.url}/repos/acme/infra/actions/runs/not-a-number`, {
      headers: { authorization: `token ${WRITE_TOKEN}` },
    });
    await post('/repos/acme/infra/issues/40/comments', '{not json');
    const unknown = await fetch(`${double.url}/repos/acme/infra/pulls`, {
      headers: { authorization: `token ${WRITE_TOKEN}` },
    });

    expect(unknown.status).toBe(404);
    expect(double.violations.map((violation) => `${violation.phase}: ${violation.message}`)).toEqual([
      'request: request body.ref: required property is missing',
      'request: path parameter run_id: expected integer, got string "not-a-number"',
      'request: the request body is not JSON',
      'route: GET /repos/acme/infra/pulls is not an operation of the OpenAPI subset',
    ]);
    double.violations.length = 0;
  });

  it('the response validator rejects what GitHub would never send', () => {
    const subset = OpenApiSubset.load();
    const comment = {
      id: 1,
      node_id: 'IC_1',
      html_url: 'h',
      issue_url: 'i',
      url: 'u',
      created_at: 'c',
      updated_at: 'u',
      user: null,
    };

    expect(subset.validate(subset.schema('issue-comment'), comment)).toEqual([]);
    expect(subset.validate(subset.schema('issue-comment'), { ...comment, user: { login: 'x' } })).toContain(
      '$.user.avatar_url: required property is missing',
    );
    expect(subset.validate(subset.schema('issue-comment'), { ...comment, author_association: 'STRANGER' })[0]).toMatch(
      /^\$\.author_association: "STRANGER" is not one of/,
    );
    const match = subset.match('GET', '/repos/a/b/actions/runs/1');
    expect(match).toBeDefined();
    if (match) {
      expect(subset.validateResponse(match, 201, {})).toEqual([
        'response status 201 is not declared for GET /repos/{owner}/{repo}/actions/runs/{run_id}',
      ]);
      expect(subset.validateResponse(match, 200, { id: 1 })).toContain(
        'response 200 body.node_id: required property is missing',
      );
    }
  });
});

describe('git over HTTP with a token', () => {
  const GIT_ENV = (home: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.com',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.com',
  });
  const git = (cwd: string, token: string | undefined, args: string[]) =>
    runProcess('git', [...(token === undefined ? [] : ['-c', `http.extraheader=${gitAuthHeader(token)}`]), ...args], {
      cwd,
      env: GIT_ENV(scratch),
      secrets: [WRITE_TOKEN, READ_TOKEN],
    });

  let work: string;
  let firstCommit: string;

  beforeAll(async () => {
    await double.createBareRepository('acme/ledger');
    work = await mkdtemp(join(scratch, 'work-'));
    expect((await git(work, undefined, ['init', '--quiet', '--initial-branch=exocomp-ledger', '.'])).code).toBe(0);
    expect((await git(work, undefined, ['commit', '--quiet', '--allow-empty', '-m', 'ledger: start'])).code).toBe(0);
    firstCommit = (await git(work, undefined, ['rev-parse', 'HEAD'])).stdout.trim();
    const pushed = await git(work, WRITE_TOKEN, [
      'push',
      double.gitUrl('acme/ledger'),
      'HEAD:refs/heads/exocomp-ledger',
    ]);
    expect(pushed.stderr).not.toContain('fatal');
    expect(pushed.code).toBe(0);
  });

  it('clones and lists refs with a read token', async () => {
    const listed = await git(scratch, READ_TOKEN, ['ls-remote', double.gitUrl('acme/ledger')]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${firstCommit}\trefs/heads/exocomp-ledger`);

    const clone = join(scratch, 'clone-read');
    const cloned = await git(scratch, READ_TOKEN, [
      'clone',
      '--quiet',
      '--branch',
      'exocomp-ledger',
      double.gitUrl('acme/ledger'),
      clone,
    ]);
    expect(cloned.code).toBe(0);
    expect((await git(clone, undefined, ['rev-parse', 'HEAD'])).stdout.trim()).toBe(firstCommit);
  });

  it('refuses a push with a read-only token (403) and changes nothing', async () => {
    expect((await git(work, undefined, ['commit', '--quiet', '--allow-empty', '-m', 'ledger: refused'])).code).toBe(0);

    const pushed = await git(work, READ_TOKEN, [
      'push',
      double.gitUrl('acme/ledger'),
      'HEAD:refs/heads/exocomp-ledger',
    ]);

    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('403');
    expect(pushed.stderr).toContain('Permission to acme/ledger.git denied to github-actions[bot]');
    expect(pushed.stderr).not.toContain(READ_TOKEN);
    expect(double.gitRequests.at(-1)).toMatchObject({ service: 'git-receive-pack', phase: 'advertise', status: 403 });
    const listed = await git(scratch, READ_TOKEN, [
      'ls-remote',
      double.gitUrl('acme/ledger'),
      'refs/heads/exocomp-ledger',
    ]);
    expect(listed.stdout.split('\t')[0]).toBe(firstCommit);
  });

  it('accepts a push with a contents: write token', async () => {
    expect((await git(work, undefined, ['commit', '--quiet', '--allow-empty', '-m', 'ledger: accepted'])).code).toBe(0);
    const head = (await git(work, undefined, ['rev-parse', 'HEAD'])).stdout.trim();

    const pushed = await git(work, WRITE_TOKEN, [
      'push',
      double.gitUrl('acme/ledger'),
      'HEAD:refs/heads/exocomp-ledger',
    ]);

    expect(pushed.code).toBe(0);
    expect(double.gitRequests.at(-1)).toMatchObject({
      service: 'git-receive-pack',
      phase: 'rpc',
      status: 200,
      login: 'github-actions[bot]',
    });
    const listed = await git(scratch, READ_TOKEN, [
      'ls-remote',
      double.gitUrl('acme/ledger'),
      'refs/heads/exocomp-ledger',
    ]);
    expect(listed.stdout.split('\t')[0]).toBe(head);
  });

  it('refuses a missing or unknown token and hides repositories a token may not reach', async () => {
    const anonymous = await git(scratch, undefined, ['ls-remote', double.gitUrl('acme/ledger')]);
    expect(anonymous.code).not.toBe(0);
    expect(double.gitRequests.at(-1)).toMatchObject({ phase: 'advertise', status: 401 });
    const unknown = await git(scratch, 'ghs_unknownTokenForTests9', ['ls-remote', double.gitUrl('acme/ledger')]);
    expect(unknown.code).not.toBe(0);
    expect(double.gitRequests.at(-1)).toMatchObject({ phase: 'advertise', status: 401 });

    double.state.tokens[READ_TOKEN] = {
      login: 'github-actions[bot]',
      permissions: { contents: 'read' },
      repositories: ['acme/infra'],
    };
    const elsewhere = await git(scratch, READ_TOKEN, ['ls-remote', double.gitUrl('acme/ledger')]);
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain('Repository not found');
  });
});
