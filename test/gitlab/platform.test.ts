/**
 * Issue 11: the GitLab platform adapters (src/platform/gitlab) against the
 * GitLab API double and git over HTTP: the sticky MR note, ledger push auth
 * with its preflight, holder liveness, deployment approvals, the pipeline
 * trigger, schedules, log sections, the state backend.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Deployments } from '@gitbeaker/rest';
import { runProcess } from '../../src/adapters/process.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { ExocompError } from '../../src/domain/errors.js';
import { GitLabApi, OPTIONAL_CALLS_BUDGET_MS } from '../../src/platform/gitlab/api.js';
import { optionalCall } from '../../src/app/runtime/optional-call.js';
import { gitlabHolder, gitlabHolderProbe } from '../../src/platform/gitlab/holder.js';
import { gitlabHolderId, parseGitLabHolderId, readGitLabJob, type GitLabJob } from '../../src/platform/gitlab/job.js';
import { openGitLabLedger } from '../../src/platform/gitlab/ledger.js';
import { createGitLabLog } from '../../src/platform/gitlab/log.js';
import { GitLabProgress } from '../../src/platform/gitlab/progress.js';
import {
  CODE_QUALITY_REPORT_FILE,
  readGitLabSettings,
  writeCodeQualityReport,
} from '../../src/platform/gitlab/session.js';
import { TerminalProgress } from '../../src/cli/terminal.js';
import type { ProgressEvent } from '../../src/app/runtime/progress.js';
import { findMergeRequest, statusMarker, upsertStatusNote } from '../../src/platform/gitlab/status-note.js';
import { publishDriftIssueTo } from '../../src/app/drift/drift-issue.js';
import { gitlabDriftIssueTarget } from '../../src/platform/gitlab/drift-issue.js';
import { gitlabJobEnv } from '../../src/platform/gitlab/job-env.js';
import { configurationDrift, infrastructureDrift, type DriftReport } from '../../src/domain/drift.js';
import { DRIFT_ISSUE_LABEL, driftIssueMarker } from '../../src/domain/drift-issue.js';
import { planJsonSchema } from '../../src/domain/plan.js';
import { gitlabStateEnv } from '../../src/platform/gitlab/tofu-state.js';
import { warnAboutGitLabGate } from '../../src/platform/gitlab/setup.js';
import { GitLabDouble } from '../support/gitlab-double.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: false };
const BOT_TOKEN = 'glpat-bot-api-token-0001';
const READER_TOKEN = 'glpat-read-only-token-02';
const SHA = 'a'.repeat(40);

let scratch: string;
let double: GitLabDouble;
let jobToken: string;

function job(overrides: Partial<GitLabJob> = {}): GitLabJob {
  return readGitLabJob({
    CI_SERVER_URL: double.url,
    CI_PROJECT_ID: String(PROJECT.id),
    CI_PROJECT_PATH: PROJECT.path,
    CI_PIPELINE_ID: '500',
    CI_JOB_ID: '77',
    CI_JOB_TOKEN: jobToken,
    GITLAB_USER_LOGIN: 'alice',
    CI_COMMIT_SHA: SHA,
    ...Object.fromEntries(Object.entries(overrides).map(([k, v]) => [k, String(v)])),
  });
}

function api(accessToken?: string): GitLabApi {
  return new GitLabApi(double.apiUrl, { jobToken, accessToken }, new SecretRegistry());
}

async function refusal(promise: Promise<unknown>): Promise<ExocompError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ExocompError);
  return error as ExocompError;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'exocomp-gitlab-platform-'));
  const gitRoot = join(scratch, 'git');
  await mkdir(join(gitRoot, 'acme'), { recursive: true });
  await runProcess('git', ['init', '--quiet', '--bare', join(gitRoot, 'acme/infra.git')]);
  double = new GitLabDouble({ gitRoot });
  await double.start();
});

afterAll(async () => {
  await double.stop();
  await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  Object.assign(double.state, {
    projects: [{ ...PROJECT }],
    mergeRequests: [],
    notes: [],
    deployments: [],
    schedules: [],
    issues: [],
    triggered: [],
  });
  double.state.tokens[BOT_TOKEN] = { kind: 'project', username: 'project_42_bot', scopes: ['api'] };
  double.state.tokens[READER_TOKEN] = { kind: 'personal', username: 'reader', scopes: ['read_api', 'read_repository'] };
  jobToken = double.jobToken({
    id: 77,
    projectId: 42,
    name: 'apply',
    stage: 'apply',
    status: 'running',
    pipelineId: 500,
    user: 'alice',
    ref: 'main',
    sha: SHA,
  });
  double.violations.length = 0;
});

describe('CI variables and holders', () => {
  it('reads the job from predefined variables and names a missing one', () => {
    const j = job();
    expect(j).toMatchObject({
      projectId: 42,
      projectPath: 'acme/infra',
      pipelineId: 500,
      jobId: 77,
      userLogin: 'alice',
      apiUrl: `${double.url}/api/v4`,
    });
    expect(gitlabHolderId(j)).toBe('gitlab:acme/infra:500:77');
    expect(parseGitLabHolderId('gitlab:acme/infra:500:77')).toEqual({
      projectPath: 'acme/infra',
      pipelineId: 500,
      jobId: 77,
    });
    expect(parseGitLabHolderId('github:acme/infra:1:1:x')).toBeUndefined();
    expect(() => readGitLabJob({ CI_SERVER_URL: 'https://gitlab.example.com' })).toThrow(/CI_PROJECT_ID/);
    // The API is reached at CI_API_V4_URL (also under a relative URL root); a root of another form is refused.
    expect(() => new GitLabApi('https://example.com/gitlab/api/v4/', {}, new SecretRegistry())).not.toThrow();
    expect(() => new GitLabApi('https://gitlab.example.com', {}, new SecretRegistry())).toThrow(/does not end in/);
  });

  it('judges a holder by the Jobs API with an access token, and cannot tell without one', async () => {
    const lease = gitlabHolder(job()).lease(new Date());
    expect(lease.origin).toEqual({ kind: 'gitlab', project: 'acme/infra', pipelineId: 500, jobId: 77 });
    expect(await gitlabHolderProbe(api(BOT_TOKEN))(lease)).toBe(false);
    (double.state.jobs[77] as { status: string }).status = 'canceled';
    expect(await gitlabHolderProbe(api(BOT_TOKEN))(lease)).toBe(true);
    expect(await gitlabHolderProbe(api())(lease)).toBeUndefined();
    expect(double.violations).toEqual([]);
  });
});

describe('sticky merge request note', () => {
  beforeEach(() => {
    double.state.mergeRequests.push({
      projectId: 42,
      iid: 7,
      sha: SHA,
      sourceBranch: 'feature',
      targetBranch: 'main',
      author: 'alice',
    });
  });

  it('is created once, edited in place across jobs, its duplicates removed, other notes untouched', async () => {
    const marker = statusMarker('provision:web');
    double.state.notes.push(
      {
        id: 1,
        projectId: 42,
        mergeRequestIid: 7,
        body: 'LGTM',
        author: 'bob',
        system: false,
        createdAt: '',
        updatedAt: '',
      },
      // Someone else quoting the marker is not ours to edit.
      {
        id: 2,
        projectId: 42,
        mergeRequestIid: 7,
        body: `${marker}\nforged`,
        author: 'mallory',
        system: false,
        createdAt: '',
        updatedAt: '',
      },
    );
    const first = await upsertStatusNote(api(BOT_TOKEN), 42, 7, 'provision:web', 'plan: 1 to add');
    expect(first).toMatchObject({ kind: 'created' });
    const second = await upsertStatusNote(api(BOT_TOKEN), 42, 7, 'provision:web', 'applied');
    expect(second).toMatchObject({ kind: 'updated', removedDuplicates: 0 });
    // A race left a second copy of our note.
    double.state.notes.push({
      id: 3,
      projectId: 42,
      mergeRequestIid: 7,
      body: `${marker}\nstale`,
      author: 'project_42_bot',
      system: false,
      createdAt: '',
      updatedAt: '',
    });
    const third = await upsertStatusNote(api(BOT_TOKEN), 42, 7, 'provision:web', 'configured');
    expect(third).toMatchObject({ kind: 'updated', removedDuplicates: 1 });
    const ours = double.state.notes.filter((n) => n.author === 'project_42_bot');
    expect(ours).toHaveLength(1);
    expect(ours[0]?.id).toBe(first.kind === 'created' ? first.id : -1);
    expect(ours[0]?.body).toBe(`${marker}\nconfigured`);
    expect(double.state.notes.find((n) => n.id === 1)?.body).toBe('LGTM');
    expect(double.state.notes.find((n) => n.id === 2)?.body).toBe(`${marker}\nforged`);
    expect(double.requestsTo('create-mr-note')).toHaveLength(1);
    expect(double.violations).toEqual([]);
  });

  it('is a notice, not a failure, without an access token, and writes nothing', async () => {
    const outcome = await upsertStatusNote(api(), 42, 7, 'provision:web', 'plan');
    expect(outcome).toEqual({ kind: 'refused', reason: expect.stringContaining('EXOCOMP_GITLAB_TOKEN') });
    expect(double.state.notes).toHaveLength(0);
    const readOnly = await upsertStatusNote(api(READER_TOKEN), 42, 7, 'provision:web', 'plan');
    expect(readOnly).toMatchObject({ kind: 'refused', reason: expect.stringContaining('HTTP 403') });
    expect(double.state.notes).toHaveLength(0);
  });

  it('finds the merge request from the job, else from the commit', async () => {
    expect(await findMergeRequest(api(), 42, { mergeRequestIid: 9, sha: SHA })).toBe(9);
    expect(await findMergeRequest(api(), 42, { mergeRequestIid: undefined, sha: SHA })).toBe(7);
    expect(await findMergeRequest(api(), 42, { mergeRequestIid: undefined, sha: 'b'.repeat(40) })).toBeUndefined();
    // The job token may read the commit's merge requests (GitLab lists that route for job tokens).
    expect(double.requestsTo('commit-merge-requests').every((r) => r.tokenKind === 'job' && r.status === 200)).toBe(
      true,
    );
    expect(double.violations).toEqual([]);
  });
});

describe('the sticky drift issue', () => {
  const RUN = 'http://gitlab.invalid/acme/infra/-/jobs/77';
  const redact = (text: string) => text;
  function report(drifted: boolean): DriftReport {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: drifted ? [{ address: 'terraform_data.hosts', change: { actions: ['update'] } }] : [],
    });
    return {
      workspace: 'edge',
      checkedAt: '2026-11-30T23:00:00.000Z',
      infrastructure: { ok: true, value: infrastructureDrift(plan, 'f', []) },
      configuration: {
        ok: true,
        value: configurationDrift({
          checkedHosts: ['web1'],
          results: [],
          keyMismatches: [],
          unreachableBeforePlay: [],
        }),
      },
    };
  }

  it('is opened while drift exists, updated, and closed with a note once clean; an issue someone else wrote with the marker is left alone', async () => {
    double.state.issues.push({
      projectId: 42,
      iid: 1,
      title: 'Drift in tf:edge',
      description: `${driftIssueMarker('edge')}\nforged`,
      state: 'opened',
      labels: [DRIFT_ISSUE_LABEL],
      author: 'mallory',
      notes: [],
      createdAt: '',
      updatedAt: '',
      closedAt: null,
    });
    const opened = await publishDriftIssueTo(gitlabDriftIssueTarget(api(BOT_TOKEN), 42, RUN), report(true), redact);
    expect(opened).toMatchObject({
      kind: 'published',
      action: 'open',
      number: 2,
      line: expect.stringContaining('drift issue #2: opened'),
    });
    const ours = double.state.issues.find((i) => i.iid === 2);
    expect(ours).toMatchObject({
      title: 'Drift in tf:edge',
      labels: [DRIFT_ISSUE_LABEL],
      author: 'project_42_bot',
      state: 'opened',
    });
    expect(ours?.description).toContain('terraform_data.hosts');
    expect(
      await publishDriftIssueTo(gitlabDriftIssueTarget(api(BOT_TOKEN), 42, RUN), report(true), redact),
    ).toMatchObject({ action: 'update', number: 2 });
    expect(double.state.issues.filter((i) => i.author === 'project_42_bot')).toHaveLength(1);
    expect(
      await publishDriftIssueTo(gitlabDriftIssueTarget(api(BOT_TOKEN), 42, RUN), report(false), redact),
    ).toMatchObject({ action: 'close', number: 2 });
    expect(ours).toMatchObject({
      state: 'closed',
      notes: [{ author: 'project_42_bot', body: expect.stringContaining('No drift any more') }],
    });
    expect(double.state.issues.find((i) => i.iid === 1)).toMatchObject({
      state: 'opened',
      description: `${driftIssueMarker('edge')}\nforged`,
      notes: [],
    });
    expect(
      await publishDriftIssueTo(gitlabDriftIssueTarget(api(BOT_TOKEN), 42, RUN), report(false), redact),
    ).toMatchObject({ action: 'none' });
    expect(double.violations).toEqual([]);
  });

  it('is a notice without an access token (the job token cannot reach issues), or with one that may only read', async () => {
    expect(await publishDriftIssueTo(gitlabDriftIssueTarget(api(), 42, RUN), report(true), redact)).toEqual({
      kind: 'refused',
      reason: expect.stringContaining('EXOCOMP_GITLAB_TOKEN'),
    });
    expect(
      await publishDriftIssueTo(gitlabDriftIssueTarget(api(READER_TOKEN), 42, RUN), report(true), redact),
    ).toMatchObject({
      kind: 'refused',
      reason: expect.stringContaining('HTTP 403'),
    });
    expect(double.state.issues).toEqual([]);
    expect(double.violations).toEqual([]);
  });
});

describe('ledger push', () => {
  const ledgerHead = async () =>
    (
      await runProcess('git', [
        '--git-dir',
        join(scratch, 'git/acme/infra.git'),
        'for-each-ref',
        '--format=%(refname) %(objectname)',
      ])
    ).stdout;

  it('refuses a job token the project does not let push, naming the setting, before any write', async () => {
    const before = await ledgerHead();
    const ledger = openGitLabLedger({
      job: job(),
      branch: 'exocomp-ledger',
      ledgerProject: undefined,
      env: {},
      secrets: new SecretRegistry(),
    });
    expect(ledger.credential).toBe('job-token');
    const error = await refusal(ledger.preflight());
    expect(error.kind).toBe('permission');
    expect(`${error.message} ${error.help ?? ''}`).toContain('Allow Git push requests to the repository');
    expect(`${error.message} ${error.help ?? ''}`).not.toContain(jobToken);
    expect(await ledgerHead()).toBe(before);
  });

  it('pushes with the job token once the project allows it', async () => {
    (double.state.projects[0] as { jobTokenPushAllowed: boolean }).jobTokenPushAllowed = true;
    const ledger = openGitLabLedger({
      job: job(),
      branch: 'exocomp-ledger',
      ledgerProject: undefined,
      env: {},
      secrets: new SecretRegistry(),
    });
    await ledger.preflight();
    await ledger.store.update(() => ({
      writes: new Map([['probe.json', '{}\n']]),
      message: 'test: first record',
      result: undefined,
    }));
    expect(await ledgerHead()).toMatch(/refs\/heads\/exocomp-ledger-records\/probe\.json [0-9a-f]{40}/);
    const pushes = double.gitRequests.filter((r) => r.service === 'git-receive-pack' && r.phase === 'rpc');
    expect(pushes.at(-1)).toMatchObject({ login: 'alice', status: 200 });
  });

  it('exports the shard of a parallel job for playbook run --shard, none without parallel, and refuses a broken pair before pushing', async () => {
    (double.state.projects[0] as { jobTokenPushAllowed: boolean }).jobTokenPushAllowed = true;
    const request = (env: NodeJS.ProcessEnv) => ({
      job: job(),
      branch: 'exocomp-ledger',
      ledgerProject: undefined,
      env,
      secrets: new SecretRegistry(),
      state: 'local' as const,
      stateName: undefined,
    });
    expect((await gitlabJobEnv(request({ CI_NODE_INDEX: '2', CI_NODE_TOTAL: '3' }))).EXOCOMP_SHARD).toBe('2/3');
    expect(await gitlabJobEnv(request({ CI_NODE_TOTAL: '1' }))).not.toHaveProperty('EXOCOMP_SHARD');
    const pushes = () => double.gitRequests.filter((r) => r.service === 'git-receive-pack').length;
    const before = pushes();
    await expect(gitlabJobEnv(request({ CI_NODE_TOTAL: '3' }))).rejects.toThrow(
      /CI_NODE_INDEX and CI_NODE_TOTAL must both be set/,
    );
    expect(pushes()).toBe(before);
  });

  it('names the write_repository scope for an access token that may only read, and refuses a job token for another project', async () => {
    const ledger = openGitLabLedger({
      job: job(),
      branch: 'exocomp-ledger',
      ledgerProject: undefined,
      env: { EXOCOMP_LEDGER_TOKEN: READER_TOKEN },
      secrets: new SecretRegistry(),
    });
    expect(ledger.credential).toBe('access-token');
    const error = await refusal(ledger.preflight());
    expect(error.help).toContain('write_repository');
    expect(() =>
      openGitLabLedger({
        job: job(),
        branch: 'exocomp-ledger',
        ledgerProject: 'acme/ledger',
        env: {},
        secrets: new SecretRegistry(),
      }),
    ).toThrow(/only to the job's own project/);
  });
});

describe('approvals, continuation and schedules', () => {
  it('reads the approvals of the deployment the job makes', async () => {
    double.state.deployments.push({
      id: 9,
      projectId: 42,
      environment: 'production',
      jobId: 77,
      status: 'blocked',
      user: 'alice',
      requiredApprovals: 1,
      approvals: [],
    });
    double.state.tokens['glpat-carol'] = { kind: 'personal', username: 'carol', scopes: ['api'] };
    const before = await api().deploymentOfJob(42, 'production', 77);
    expect(before).toMatchObject({ id: 9, status: 'blocked', user: 'alice', approvals: [] });
    // Carol approves in GitLab (exocomp never approves a deployment itself).
    await new Deployments({ host: double.url, token: 'glpat-carol' }).setApproval(42, 9, 'approved', {
      comment: 'ship it',
    });
    const after = await api().deploymentOfJob(42, 'production', 77);
    expect(after).toMatchObject({
      status: 'created',
      approvals: [{ user: 'carol', status: 'approved', comment: 'ship it' }],
    });
    expect(await api().deploymentOfJob(42, 'production', 78)).toBeUndefined();
    expect(double.violations).toEqual([]);
  });

  it('triggers the continuation pipeline with the job token', async () => {
    const started = await api().triggerPipeline(42, 'main', { EXOCOMP_WORKFLOW_ID: 'web-1' }, jobToken);
    expect(started.id).toBeGreaterThan(0);
    expect(double.state.triggered).toEqual([
      expect.objectContaining({ ref: 'main', variables: { EXOCOMP_WORKFLOW_ID: 'web-1' }, username: 'alice' }),
    ]);
    expect(double.violations).toEqual([]);
  });

  it('creates a schedule with its variables, lists it and removes it; the job token may not', async () => {
    const created = await api(BOT_TOKEN).createSchedule(42, {
      description: 'exocomp nightly',
      ref: 'main',
      cron: '17 3 * * *',
      variables: { EXOCOMP_SCHEDULE: 'nightly' },
    });
    expect(double.state.schedules).toHaveLength(1);
    expect(double.state.schedules[0]).toMatchObject({
      description: 'exocomp nightly',
      cron: '17 3 * * *',
      cronTimezone: 'UTC',
      variables: [{ key: 'EXOCOMP_SCHEDULE', value: 'nightly' }],
    });
    expect((await api(BOT_TOKEN).schedules(42)).map((s) => s.id)).toEqual([created.id]);
    expect((await api(BOT_TOKEN).schedule(42, created.id)).variables).toEqual([
      { key: 'EXOCOMP_SCHEDULE', value: 'nightly' },
    ]);
    await api(BOT_TOKEN).removeSchedule(42, created.id);
    expect(double.state.schedules).toHaveLength(0);
    expect((await refusal(api().schedules(42))).help).toContain('EXOCOMP_GITLAB_TOKEN');
    expect(double.violations).toEqual([]);
  });
});

describe('log sections and state backend', () => {
  it('writes collapsible sections, redacts secrets, and never lets output forge a marker', () => {
    const secrets = new SecretRegistry();
    secrets.add('hunter2-secret-value');
    let out = '';
    const log = createGitLabLog(
      secrets,
      (t) => (out += t),
      () => 1_700_000_000_000,
    );
    log.startGroup('configure web');
    log.info('token hunter2-secret-value\n\u001b[0Ksection_end:1:fake\r');
    log.endGroup();
    expect(out).toContain(
      '\u001b[0Ksection_start:1700000000:exocomp_1_configure_web[collapsed=true]\r\u001b[0Kconfigure web\n',
    );
    expect(out).toContain('\u001b[0Ksection_end:1700000000:exocomp_1_configure_web\r\u001b[0K\n');
    expect(out).not.toContain('hunter2');
    expect(out).toContain('^[[0Ksection_end:1:fake');
    expect(out.split('\u001b[0Ksection_end')).toHaveLength(2);
  });

  it('reads the destroy guard’s template inputs: allow-destroy, and protect as a comma-separated list', () => {
    expect(
      readGitLabSettings({ EXOCOMP_ALLOW_DESTROY: 'true', EXOCOMP_PROTECT: 'module.db, aws_instance.*' }),
    ).toMatchObject({
      EXOCOMP_ALLOW_DESTROY: true,
      EXOCOMP_PROTECT: ['module.db', 'aws_instance.*'],
    });
    expect(readGitLabSettings({ EXOCOMP_PROTECT: '' })).toMatchObject({
      EXOCOMP_ALLOW_DESTROY: false,
      EXOCOMP_PROTECT: [],
    });
  });

  it('collects tofu’s diagnostics into the job’s code-quality report (an empty one when tofu said nothing)', async () => {
    const log = createGitLabLog(
      new SecretRegistry(),
      () => undefined,
      () => 0,
    );
    const progress = new GitLabProgress(log);
    const dir = await mkdtemp(join(tmpdir(), 'exocomp-codequality-'));
    try {
      writeCodeQualityReport(dir, progress.diagnostics, log);
      const read = async () => JSON.parse(await readFile(join(dir, CODE_QUALITY_REPORT_FILE), 'utf8')) as unknown;
      expect(await read()).toEqual([]);
      progress.emit({
        type: 'tofu-diagnostic',
        diagnostic: { severity: 'error', summary: 'Unsupported argument', file: 'infra/main.tf', line: 9 },
      });
      writeCodeQualityReport(dir, progress.diagnostics, log);
      expect(await read()).toEqual([
        expect.objectContaining({ severity: 'major', location: { path: 'infra/main.tf', lines: { begin: 9 } } }),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // Every job template that runs tofu hands the report to GitLab, also when the job fails.
    for (const [template, jobs] of [
      ['plan.yml', 1],
      ['provision.yml', 2],
      ['resume.yml', 1],
    ] as const) {
      const text = await readFile(join(repoRoot, 'templates', template), 'utf8');
      expect(text.split(`codequality: ${CODE_QUALITY_REPORT_FILE}`)).toHaveLength(jobs + 1);
      expect(text.split('when: always')).toHaveLength(jobs + 1);
    }
  });

  it('prints a play inside its step’s section, one line per task and host, as the CLI does', () => {
    let out = '';
    const progress = new GitLabProgress(
      createGitLabLog(
        new SecretRegistry(),
        (t) => (out += t),
        () => 0,
      ),
    );
    let cli = '';
    const terminal = new TerminalProgress((line) => (cli += `${line}\n`));
    const events: ProgressEvent[] = [
      { type: 'step-started', workflow: 'edge-1', step: 'configure', index: 4, total: 4, attempt: 1 },
      { type: 'play-started', step: 'configure', play: 'Configure', tasks: 2 },
      ...['web1', 'web2'].flatMap((host) =>
        ['Install nginx', 'Start nginx'].map((task, i): ProgressEvent => ({
          type: 'task-result',
          step: 'configure',
          host,
          task,
          action: 'ansible.builtin.package',
          status: host === 'web2' && i === 1 ? 'failed' : 'changed',
          ...(host === 'web2' && i === 1 ? { msg: 'unit nginx not found', rc: 5 } : {}),
          index: i + 1,
          total: 2,
          elapsedMs: 1200,
        })),
      ),
      { type: 'step-failed', step: 'configure', index: 4, total: 4, durationMs: 5000, summary: 'web2 failed' },
    ];
    for (const event of events) {
      progress.emit(event);
      terminal.emit(event);
    }
    const [, section = ''] = out.split('[collapsed=true]');
    const inside = section.split('\u001b[0Ksection_end')[0] ?? '';
    for (const host of ['web1', 'web2'])
      for (const task of ['Install nginx', 'Start nginx']) expect(inside).toContain(`${host} · ${task} `);
    expect(inside).toContain('play Configure: 2 task(s)');
    expect(inside).toContain('      unit nginx not found (rc 5)');
    // The same lines as the CLI's (which prefixes the step).
    const taskLines = (text: string) =>
      text
        .split('\n')
        .filter((line) => line.includes(' · '))
        .map((line) => line.replace('[4/4] configure ', ''));
    expect(taskLines(inside)).toEqual(taskLines(cli));
    expect(taskLines(inside)).toHaveLength(4);
  });

  it('points the http backend at the project’s GitLab-managed state', () => {
    const env = gitlabStateEnv({ apiUrl: 'https://gitlab.example.com/api/v4', projectId: 42, jobToken: 'tok' }, 'web');
    expect(env).toMatchObject({
      TF_HTTP_ADDRESS: 'https://gitlab.example.com/api/v4/projects/42/terraform/state/web',
      TF_HTTP_LOCK_ADDRESS: 'https://gitlab.example.com/api/v4/projects/42/terraform/state/web/lock',
      TF_HTTP_LOCK_METHOD: 'POST',
      TF_HTTP_UNLOCK_METHOD: 'DELETE',
      TF_HTTP_USERNAME: 'gitlab-ci-token',
      TF_HTTP_PASSWORD: 'tok',
    });
    expect(() => gitlabStateEnv({ apiUrl: 'x', projectId: 1, jobToken: 't' }, '../x y')).toThrow(/state name/);
  });
});

describe('the gate’s setup in the plan and apply jobs’ log (issue 27, Deliver 4)', () => {
  const target = { project: String(PROJECT.id), approvalMode: 'manual' as const, environment: 'production' };
  const main = { projectId: PROJECT.id, name: 'main', push: [{ accessLevel: 40 }], allowForcePush: false };
  const records = { ...main, name: 'exocomp-ledger-records/*' };

  async function logOf(gitlab: GitLabApi): Promise<{ warnings: string[]; notices: string[] }> {
    const warnings: string[] = [];
    const notices: string[] = [];
    const log = { warning: (m: string) => warnings.push(m), notice: (m: string) => notices.push(m) };
    await warnAboutGitLabGate(
      gitlab,
      { ...target, ledgerBranch: 'exocomp-ledger' },
      {
        log,
        secrets: new SecretRegistry(),
        now: new Date(),
      },
    );
    return { warnings, notices };
  }

  it('says nothing for a protected project, and warns with the setting for the one protection that is off', async () => {
    double.state.protectedBranches = [main, records];
    expect(await logOf(api(BOT_TOKEN))).toEqual({ warnings: [], notices: [] });
    double.state.protectedBranches = [main];
    const { warnings, notices } = await logOf(api(BOT_TOKEN));
    expect(notices).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^The approval gate is weaker than it looks \(missing\) — ledger records/);
    expect(warnings[0]).toContain('Settings → Repository → Protected branches → protect `exocomp-ledger-records/*`');
    expect(double.violations).toEqual([]);
  });

  it('judges the record branches in the ledger’s project when the ledger-project input names one', async () => {
    double.state.projects.push({ id: 43, path: 'acme/ledger', jobTokenPushAllowed: true });
    double.state.protectedBranches = [main, { ...records, projectId: 43 }];
    const warnings: string[] = [];
    const log = { warning: (m: string) => warnings.push(m), notice: (m: string) => warnings.push(m) };
    const ledgerTarget = { ...target, ledgerBranch: 'exocomp-ledger', ledgerProject: 'acme/ledger' };
    await warnAboutGitLabGate(api(BOT_TOKEN), ledgerTarget, { log, secrets: new SecretRegistry(), now: new Date() });
    expect(warnings).toEqual([]);
    double.state.protectedBranches = [main, records];
    await warnAboutGitLabGate(api(BOT_TOKEN), ledgerTarget, { log, secrets: new SecretRegistry(), now: new Date() });
    expect(warnings.map((w) => w.split(' (')[0])).toEqual([
      'The approval gate is weaker than it looks',
      'The approval gate is weaker than it looks',
    ]);
    expect(warnings.join('\n')).toContain('acme/ledger: Settings → Repository → Protected branches');
    expect(double.violations).toEqual([]);
  });

  it('reads the protected environment of a project named by its path (environment mode)', async () => {
    double.state.protectedBranches = [main, records];
    const environmentTarget = { ...target, project: PROJECT.path, approvalMode: 'environment' as const };
    const warnings: string[] = [];
    const log = { warning: (m: string) => warnings.push(m), notice: (m: string) => warnings.push(m) };
    const warn = () =>
      warnAboutGitLabGate(
        api(BOT_TOKEN),
        { ...environmentTarget, ledgerBranch: 'exocomp-ledger' },
        { log, secrets: new SecretRegistry(), now: new Date() },
      );
    double.state.protectedEnvironments = [{ projectId: PROJECT.id, name: 'production', requiredApprovals: 1 }];
    await warn();
    expect(warnings).toEqual([]);
    double.state.protectedEnvironments = [];
    await warn();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('protected environment production: the environment is not protected');
    expect(double.violations).toEqual([]);
  });

  it('is a notice naming the grant without an access token, and one notice when the API is unreachable', async () => {
    double.state.protectedBranches = [];
    const withoutToken = await logOf(api());
    expect(withoutToken.warnings).toEqual([]);
    expect(withoutToken.notices.length).toBeGreaterThan(0);
    for (const notice of withoutToken.notices) expect(notice).toContain('EXOCOMP_GITLAB_TOKEN');
    const unreachable = await logOf(
      new GitLabApi('http://127.0.0.1:1/api/v4', { jobToken, accessToken: BOT_TOKEN }, new SecretRegistry()).optional(),
    );
    expect(unreachable.warnings).toEqual([]);
    expect(unreachable.notices).toHaveLength(1);
    expect(unreachable.notices[0]).toMatch(
      /^Could not check the protections the approval relies on \(optional, the job goes on\)/,
    );
    // Issue 38, item 5: the notice names the API's URL and the cause, and no grant (no lookup happened).
    expect(unreachable.notices[0]).toContain("GitLab's API at http://127.0.0.1:1/api/v4 gave no answer");
    expect(unreachable.notices[0]).not.toContain('grant');
  });

  it('an API that accepts connections and never answers: one budget for the job’s optional calls, one notice naming the URL (issue 38, item 5)', async () => {
    const sockets: Socket[] = [];
    const blackHole = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}/api/v4`;
    try {
      const optional = new GitLabApi(url, { jobToken, accessToken: BOT_TOKEN }, new SecretRegistry()).optional();
      const lines: string[] = [];
      const notices: string[] = [];
      const log = { warning: (m: string) => notices.push(m), notice: (m: string) => notices.push(m) };
      const job = { log: { ...log, info: (m: string) => lines.push(m) }, secrets: new SecretRegistry() };
      const started = Date.now();
      // What a plan job calls that is optional: the merge request lookup, then the gate's setup check.
      const lookup = await optionalCall(job.log, job.secrets, { skipped: 'no status comment', grant: 'X' }, () =>
        findMergeRequest(optional, PROJECT.id, { mergeRequestIid: undefined, sha: 'a'.repeat(40) }),
      );
      const first = sockets.length;
      await warnAboutGitLabGate(optional, { ...target, ledgerBranch: 'exocomp-ledger' }, { ...job, now: new Date() });
      const waited = Date.now() - started;
      expect(lookup).toBeUndefined();
      expect(notices).toHaveLength(1);
      expect(notices[0]).toContain(`GitLab's API at ${url} gave no answer`);
      expect(notices[0]).not.toContain('grant X');
      // The bound: one request waited out the budget; the setup check after it made none and said so quietly.
      expect(first).toBe(1);
      expect(sockets).toHaveLength(1);
      expect(lines).toEqual([expect.stringContaining('Could not check the protections')]);
      expect(OPTIONAL_CALLS_BUDGET_MS).toBeLessThanOrEqual(10_000);
      expect(waited).toBeGreaterThanOrEqual(OPTIONAL_CALLS_BUDGET_MS - 500);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    }
  }, 60_000);
});
