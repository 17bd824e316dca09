/**
 * Issue 36 item 4 through the core, over the in-memory ledger: the destroy guard judges every plan before it is
 * applied — a run no approval binds (continueWorkflow straight into the chain, its plan made beside the first write),
 * `workspace apply` (applyWorkspace), and an approved plan (its protected addresses judged again). A refusal applies
 * nothing (the state's serial unchanged) and says what to do. The tofu stand-in plans and applies.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyWorkspace } from '../../src/app/provision/apply-workspace.js';
import { continueWorkflow, failureOf } from '../../src/app/provision/continue-workflow.js';
import { planForApproval } from '../../src/app/provision/provision.js';
import type { RunInputs } from '../../src/app/plays/run-inputs.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { decideApproval, stepOf } from '../../src/domain/workflow.js';
import { LEDGER_PATHS, RecordWrites, requireWorkflow } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { standinPath } from '../support/tofu-standin.js';
import { sampleWorkflow, T0 } from '../support/workflows.js';

const run = promisify(execFile);

/** web1 (replaced when its image changes), web2 (destroyed when left out), db. */
function config(hosts: { web2: boolean }, web1Image: string) {
  return {
    variable: { ansible_inventory: { type: 'any' } },
    resource: {
      terraform_data: {
        web1: { input: 'web1', triggers_replace: web1Image },
        ...(hosts.web2 ? { web2: { input: 'web2' } } : {}),
        db: { input: 'db' },
      },
    },
    output: { ansible_inventory: { value: '${var.ansible_inventory}' } },
  };
}
const inventory = (names: string[]) => ({
  all: { hosts: Object.fromEntries(names.map((n) => [n, { ansible_host: `127.0.9.${n.slice(-1)}` }])) },
});

describe('the destroy guard before every apply', () => {
  let root: string;
  let ws: string;
  let store: MemoryLedgerStore;
  let app: AppContext;

  const serial = async () =>
    (JSON.parse(await readFile(join(ws, 'terraform.tfstate'), 'utf8')) as { serial: number }).serial;
  const policy = async (text: string) => {
    await mkdir(join(ws, '.exocomp'), { recursive: true });
    await writeFile(join(ws, '.exocomp', 'policy.yml'), text);
  };
  const inputs = (extra: Partial<RunInputs> = {}): RunInputs => ({
    tofuBinary: standinPath,
    runSecrets: {},
    rotateHostKeys: [],
    secrets: new SecretRegistry(),
    ...extra,
  });
  /** A new workflow no approval binds, run straight into the chain (its plan made beside the creating write). */
  const provision = (id: string, extra: Partial<RunInputs> = {}) =>
    continueWorkflow(app, {
      workflowId: id,
      newId: true,
      inputs: inputs(extra),
      create: () => ({
        workspacePath: 'ws',
        workspaceName: 'fleet',
        playbook: 'site.yml',
        options: { sshWaitMs: 1000, onboardUser: 'exocomp', check: false },
        requireApproval: false,
        trigger: { kind: 'local' },
        requester: 'alice',
      }),
    });
  const workspaceApply = (extra: { allowDestroy?: boolean; protect?: string[] } = {}) =>
    applyWorkspace(app, {
      workspacePath: 'ws',
      name: 'fleet',
      tofuBinary: standinPath,
      secrets: new SecretRegistry(),
      guard: { allowDestroy: extra.allowDestroy ?? false, protect: extra.protect ?? [] },
      info: () => {},
      warn: () => {},
    });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'exocomp-applyguard-'));
    ws = join(root, 'ws');
    await mkdir(ws);
    await writeFile(join(root, 'site.yml'), '- hosts: all\n  tasks: []\n');
    store = new MemoryLedgerStore({
      files: { [LEDGER_PATHS.inventoryFile('fleet')]: JSON.stringify(inventory(['web1', 'web2'])) },
    });
    app = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => T0,
      cwd: root,
      env: {},
      progress: new RecordingProgress(),
    };
    // Applied: web1, web2 and db; tf:fleet names web1 and web2.
    await writeFile(join(ws, 'main.tf.json'), JSON.stringify(config({ web2: true }, 'img-1')));
    await writeFile(
      join(ws, 'terraform.tfvars.json'),
      JSON.stringify({ ansible_inventory: inventory(['web1', 'web2']) }),
    );
    await run(standinPath, ['init', '-input=false', '-no-color'], { cwd: ws });
    await run(standinPath, ['apply', '-auto-approve', '-input=false', '-no-color'], { cwd: ws });
    // The change: web1 replaced (a new image), web2 gone.
    await writeFile(join(ws, 'main.tf.json'), JSON.stringify(config({ web2: false }, 'img-2')));
    await writeFile(join(ws, 'terraform.tfvars.json'), JSON.stringify({ ansible_inventory: inventory(['web1']) }));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a run without approval that replaces and destroys hosts is refused at apply, nothing applied, saying to add allow-destroy', async () => {
    const before = await serial();
    const outcome = await provision('fleet-1');
    expect(outcome).toMatchObject({ kind: 'ran', ok: false });
    expect(await serial()).toBe(before);
    const workflow = requireWorkflow(await store.read(), 'fleet-1');
    expect(stepOf(workflow, 'apply').state).toBe('failed');
    expect(workflow.failure).toMatchObject({ step: 'apply', kind: 'approval' });
    // The summary a step records is the refusal's first line: it says what was refused and what lets it through.
    expect(workflow.failure?.summary).toMatch(
      /^the plan of tf:fleet is refused by the destroy guard \(2 address\(es\)\), nothing was applied; .*allow-destroy/,
    );
    expect(workflow.failure?.detail).toContain('terraform_data.web1: host web1 replaced');
    expect(workflow.failure?.detail).toContain('terraform_data.web2: host web2 destroyed');
    // The face's error says the run can go on, not that the workflow is spent.
    expect(failureOf(outcome)?.help).toContain('resume or re-run');
    expect(failureOf(outcome)?.help).not.toContain('cannot apply any more');
  });

  it('with allow-destroy the run applies; a protected address is refused even then, by the policy or the run’s --protect', async () => {
    await policy('protect:\n  - terraform_data.web*\n');
    const before = await serial();
    expect(await provision('fleet-2', { allowDestroy: true })).toMatchObject({ kind: 'ran', ok: false });
    expect(requireWorkflow(await store.read(), 'fleet-2').failure?.summary).toContain(
      'a protected address changes only after .exocomp/policy.yml',
    );
    expect(requireWorkflow(await store.read(), 'fleet-2').failure?.detail).toContain(
      'terraform_data.web2: destroy of an address protected by "terraform_data.web*"',
    );
    await rm(join(ws, '.exocomp'), { recursive: true });
    const runProtect = await workspaceApply({ allowDestroy: true, protect: ['terraform_data.web2'] }).catch(
      (e: unknown) => e,
    );
    expect(runProtect).toMatchObject({ kind: 'approval' });
    expect((runProtect as Error).message).toContain(
      'terraform_data.web2: destroy of an address protected by "terraform_data.web2"',
    );
    expect(await serial()).toBe(before);

    const allowed = await workspaceApply({ allowDestroy: true });
    expect(allowed.applied).toBe(true);
    expect(await serial()).toBeGreaterThan(before);
  });

  it('workspace apply without allow-destroy is refused before the apply; the policy’s own allow-destroy lets it through', async () => {
    const before = await serial();
    await expect(workspaceApply()).rejects.toMatchObject({
      kind: 'approval',
      message: expect.stringContaining('terraform_data.web1: host web1 replaced'),
      help: expect.stringMatching(/^nothing was applied; .*--allow-destroy/),
    });
    expect(await serial()).toBe(before);
    await policy('allow-destroy: true\n');
    expect((await workspaceApply()).applied).toBe(true);
  });

  it('an approved plan is applied with the destroys it was approved with, but a protect added since is refused', async () => {
    const id = 'fleet-3';
    const created = { ...sampleWorkflow(id, { requireApproval: true }), workspace: { path: 'ws', name: 'fleet' } };
    await store.update(() => ({ writes: new RecordWrites().workflow(created), message: 'created', result: undefined }));
    const planned = await planForApproval(app, id, inputs({ allowDestroy: true }));
    const approved = decideApproval(planned, { approve: true, by: 'bob', via: 'cli', now: T0 });
    await store.update(() => ({
      writes: new RecordWrites().workflow(approved),
      message: 'approved',
      result: undefined,
    }));
    await policy('protect:\n  - terraform_data.web1\n');
    const before = await serial();
    const refused = await continueWorkflow(app, { workflowId: id, inputs: inputs() });
    expect(refused).toMatchObject({ kind: 'ran', ok: false });
    expect(requireWorkflow(await store.read(), id).failure?.detail).toBe(
      '  terraform_data.web1: replace of an address protected by "terraform_data.web1"',
    );
    expect(await serial()).toBe(before);
  });
});
