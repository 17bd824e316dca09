/**
 * Issue 23: a CI platform the code base has never heard of runs the whole
 * chain through the core's job assembly (src/app/job/run-ci-job.ts) — its
 * face only maps settings and supplies a CiPlatform, with no change under
 * src/app. Real git, a real loopback sshd host, real ansible, the OpenTofu
 * stand-in. The keys arrive as world-readable files (as GitLab's File
 * variables are written) and the seal key as a value.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCiJob, type CiJobFace } from '../../src/app/job/run-ci-job.js';
import type { JobSettingsInput } from '../../src/app/job/job-settings.js';
import type { CiPlatform, StatusCommentOutcome } from '../../src/app/ports/ci-platform.js';
import { localHolder, probeLocalHolder } from '../../src/app/runtime/lease.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { createChainFixture, sshHostVars, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { motdPlaybook } from '../support/plays.js';
import { invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';

/** The whole of a new platform's port: a run, a log, outputs, a status comment; approvals are not its business here. */
function exampleCi(options: { lookupFails?: boolean } = {}) {
  const log: string[] = [];
  const outputs: Record<string, string> = {};
  const comments: Array<{ on: number; body: string }> = [];
  const refuse = async (): Promise<never> => {
    throw new Error('example-ci has no approvals');
  };
  const platform: CiPlatform = {
    name: 'example-ci',
    run: {
      id: 77,
      url: 'https://ci.example/runs/77',
      actor: 'carol',
      changeRequest: undefined,
      trigger: { kind: 'local' },
      decisionVia: 'example-ci run 77',
    },
    log: {
      info: (m) => log.push(`info ${m}`),
      notice: (m) => log.push(`notice ${m}`),
      warning: (m) => log.push(`warning ${m}`),
      error: (m) => log.push(`error ${m}`),
      startGroup: () => undefined,
      endGroup: () => undefined,
    },
    input: () => '',
    maskSecret: () => undefined,
    setOutput: (name, value) => {
      outputs[name] = value;
    },
    writeSummary: async () => undefined,
    upsertStatusComment: async (on, _key, body): Promise<StatusCommentOutcome> => {
      comments.push({ on, body });
      return { kind: 'created', id: comments.length };
    },
    findChangeRequest: async () => {
      if (options.lookupFails) throw new Error('fetch failed');
      return 5;
    },
    grants: { 'change-request-lookup': 'the example-ci token read access to change requests' },
    gatedJobApproval: refuse,
    mayDecide: refuse,
    continuationTarget: () => undefined,
    dispatchContinuation: refuse,
    holder: () => localHolder(),
    probeHolder: probeLocalHolder,
  };
  return { platform, log, outputs, comments };
}

describe('a third CI platform runs the chain with no change under src/app', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
    await writeFile(join(fx.dir, 'site.yml'), motdPlaybook('set by example-ci'));
    // As a GitLab runner writes File variables: readable by everyone; ssh would refuse these as they are.
    await chmod(fx.fleet.privateKeyPath, 0o666);
    await chmod(fx.bootstrap.privateKeyPath, 0o666);
  }, 120_000);

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  const face = (ci: ReturnType<typeof exampleCi>): CiJobFace => ({
    platform: ci.platform,
    secrets: new SecretRegistry(),
    ledger: { store: new GitLedgerStore({ remote: fx.ledger, cacheDir: join(fx.dir, 'cache') }) },
    progress: new RecordingProgress(),
    cwd: fx.dir,
    env: fx.env,
    tempDir: fx.dir,
  });

  const settings = (playbook: string): JobSettingsInput => ({
    scope: 'chain',
    start: { workspace: fx.workspace, workspaceName: 'edge', playbook, sshWaitMs: 60_000 },
    approval: { mode: 'none' },
    keys: {
      fleet: fx.fleet.privateKeyPath,
      bootstrap: fx.bootstrap.privateKeyPath,
      seal: 'example-ci-seal-key-0123456789abcdef',
    },
    tofuBinary: standinPath,
    ledgerBranch: 'exocomp-ledger',
  });

  it('runs apply → ssh-wait → onboard → configure; an unreachable optional lookup is a notice', async () => {
    const ci = exampleCi({ lookupFails: true });
    const result = await runCiJob(settings('site.yml'), face(ci));
    expect(ci.log.filter((l) => l.startsWith('error'))).toEqual([]);
    expect(result.code).toBe(0);
    expect(result.outcome?.kind).toBe('ran');
    expect(ci.outputs).toMatchObject({ 'workflow-id': 'edge-77', 'workflow-state': 'provisioned' });
    const workflow = JSON.parse((await fx.ledgerFile('workflows/edge-77.json')) ?? '{}');
    expect(workflow.steps.map((s: { state: string }) => s.state)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(invocationsOf(await readStandinLog(fx.standinLog), 'apply')).toHaveLength(1);
    expect(await host.readFile('/etc/motd-exocomp')).toContain('set by example-ci');
    // The lookup failed ("fetch failed"): a notice naming what to grant, no comment, the job still green.
    expect(ci.log.join('\n')).toMatch(
      /notice .*could not be looked up \(optional, the job goes on\): fetch failed; to get it, grant the example-ci token/,
    );
    expect(ci.comments).toEqual([]);
  }, 900_000);
});
