/** The GitHub layer's pure parts: input parsing, status size, plan sealing, the provider cache key. */
import { describe, expect, it } from 'vitest';
import { createWorkflow } from '../../src/domain/workflow.js';
import { ACTION_INPUTS, readSettings } from '../../src/platform/github/inputs.js';
import { runInputSettings } from '../../src/platform/github/session.js';
import { sealPlan, unsealPlan } from '../../src/app/provision/sealed-plan.js';
import { providerCacheKey } from '../../src/platform/github/provider-cache.js';
import { readRunContext, workflowFileOf } from '../../src/platform/github/run-context.js';
import { COMMENT_LIMIT, commentMarker, statusMarkdown } from '../../src/platform/github/status.js';

const read = (inputs: Record<string, string>, masked: string[] = []) =>
  readSettings(
    ACTION_INPUTS.provision,
    (name) => inputs[name] ?? '',
    (value) => masked.push(value),
  );

describe('settings from inputs', () => {
  it('applies the parsers: durations, booleans, lists, enums', () => {
    const s = read({
      token: 't0ken-value',
      'ssh-wait': '90s',
      'require-approval': 'True',
      'rotate-host-keys': 'web,\n[10.0.0.1]:2222\n',
      'approval-mode': 'dispatch',
    });
    expect(s['ssh-wait']).toBe(90_000);
    expect(s['require-approval']).toBe(true);
    expect(s['rotate-host-keys']).toEqual(['web', '[10.0.0.1]:2222']);
    expect(s['approval-mode']).toBe('dispatch');
    expect(s['ledger-branch']).toBe('exocomp-ledger');
    expect(s.comment).toBe(true);
  });

  it('maps host-keys to the core setting: unset when empty (the workflow’s own), known/tofu as given, anything else refused', () => {
    expect(read({ token: 't' })['host-keys']).toBeUndefined();
    expect(read({ token: 't', 'host-keys': ' known ' })['host-keys']).toBe('known');
    expect(() => read({ token: 't', 'host-keys': 'trust-me' })).toThrow(
      'host-keys: must be one of auto, known, tofu, not "trust-me"',
    );
    for (const step of ['plan', 'apply', 'ssh-wait', 'onboard'] as const)
      expect(ACTION_INPUTS[step]).toHaveProperty('host-keys');
  });

  it('carries the bastion input as text on every face that reaches hosts; the core judges it', () => {
    for (const step of ['provision', 'plan', 'apply', 'ssh-wait', 'onboard', 'configure', 'converge'] as const)
      expect(ACTION_INPUTS[step]).toHaveProperty('bastion');
    expect(read({ token: 't', bastion: ' ops@[fd00::1]:2222 ' }).bastion).toBe('ops@[fd00::1]:2222');
    expect(runInputSettings({ bastion: 'ops@jump' })).toMatchObject({ bastion: 'ops@jump' });
  });

  it('masks secret inputs as they are read, and never quotes them in a refusal', () => {
    const masked: string[] = [];
    expect(() =>
      read(
        { token: 'ghs_abcdef123456', 'ssh-wait': 'soon', 'require-approval': 'yes', 'seal-key': ' seal-value-xyz\n' },
        masked,
      ),
    ).toThrow(/ssh-wait: .*; require-approval: must be true or false, not "yes"/);
    expect(masked).toEqual(expect.arrayContaining(['ghs_abcdef123456', ' seal-value-xyz\n', 'seal-value-xyz']));
  });

  it('requires the token', () => {
    expect(() => read({})).toThrow(/token: the token input is required/);
  });
});

describe('run context', () => {
  it('reads the workflow file from GITHUB_WORKFLOW_REF', () => {
    expect(workflowFileOf('acme/infra/.github/workflows/provision.yml@refs/heads/main')).toBe('provision.yml');
    expect(workflowFileOf(undefined)).toBeUndefined();
  });

  it('refuses to run outside a job, naming what is missing', () => {
    expect(() => readRunContext({}, '/tmp')).toThrow(
      /GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_ACTOR, GITHUB_EVENT_NAME missing or malformed/,
    );
  });
});

describe('status markdown', () => {
  const workflow = createWorkflow({
    id: 'edge-1',
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: { kind: 'github' },
    options: { sshWaitMs: 1000, onboardUser: 'exocomp', check: false },
    requireApproval: true,
    now: new Date('2026-01-01T00:00:00Z'),
  });
  const run = readRunContext(
    {
      GITHUB_REPOSITORY: 'acme/infra',
      GITHUB_RUN_ID: '5',
      GITHUB_ACTOR: 'alice',
      GITHUB_EVENT_NAME: 'push',
      GITHUB_SERVER_URL: 'https://github.com',
    },
    '/tmp',
  );

  it('carries the marker and stays under the comment limit however long the details are', () => {
    const long = {
      ...workflow,
      steps: workflow.steps.map((s) => ({ ...s, detail: 'x'.repeat(200_000) })),
      failure: { step: 'apply' as const, kind: 'k', summary: 'y'.repeat(200_000), at: 'now' },
    };
    const body = statusMarkdown(long, { run, now: new Date() });
    expect(body.length).toBeLessThanOrEqual(COMMENT_LIMIT);
    expect(body.startsWith(commentMarker('edge-1'))).toBe(true);
  });

  it('gives the exact approve and reject commands while awaiting approval', () => {
    const body = statusMarkdown(
      { ...workflow, state: 'awaiting-approval', approval: { ...workflow.approval, planSummary: '+2 ~1 -0' } },
      { run, now: new Date(), approveWorkflow: 'ok.yml' },
    );
    expect(body).toContain('gh workflow run ok.yml --repo acme/infra -f workflow-id=edge-1 -f decision=approve');
    expect(body).toContain('gh workflow run ok.yml --repo acme/infra -f workflow-id=edge-1 -f decision=reject');
    expect(body).toContain('Plan: + 2 to add, ~ 1 to change, − 0 to destroy');
  });
});

describe('sealed plans', () => {
  const plan = Buffer.from('{"variables":{"db_password":{"value":"hunter2-hunter2"}}}');

  it('round-trips, and holds nothing of the plan in clear', () => {
    const sealed = sealPlan(plan, 'a-seal-key-of-enough-length', 'edge-1');
    expect(sealed.includes(Buffer.from('hunter2'))).toBe(false);
    expect(unsealPlan(sealed, 'a-seal-key-of-enough-length', 'edge-1').equals(plan)).toBe(true);
  });

  it('refuses another key, another workflow, a flipped byte', () => {
    const sealed = sealPlan(plan, 'a-seal-key-of-enough-length', 'edge-1');
    expect(() => unsealPlan(sealed, 'another-seal-key-of-length', 'edge-1')).toThrow(/does not open/);
    expect(() => unsealPlan(sealed, 'a-seal-key-of-enough-length', 'edge-2')).toThrow(/does not open/);
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1]! ^= 1;
    expect(() => unsealPlan(flipped, 'a-seal-key-of-enough-length', 'edge-1')).toThrow(/does not open/);
    expect(() => unsealPlan(Buffer.from('not a plan'), 'a-seal-key-of-enough-length', 'edge-1')).toThrow(
      /not a sealed exocomp plan/,
    );
  });
});

describe('provider cache key', () => {
  it('follows the lock file, the platform and the architecture', () => {
    const lock = 'provider "registry.opentofu.org/hashicorp/null" {\n  version = "3.2.2"\n}\n';
    const key = providerCacheKey(lock, 'linux', 'x64');
    expect(key).toMatch(/^exocomp-tofu-providers-linux-x64-[0-9a-f]{64}$/);
    expect(providerCacheKey(lock, 'linux', 'x64')).toBe(key);
    expect(providerCacheKey(lock.replace('3.2.2', '3.2.3'), 'linux', 'x64')).not.toBe(key);
    expect(providerCacheKey(lock, 'linux', 'arm64')).not.toBe(key);
  });
});
