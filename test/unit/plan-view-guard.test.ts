/**
 * Issue 27 items 1–2 through the core: a plan made by the tofu stand-in
 * against a standing inventory with pins, viewed and judged by the destroy
 * guard before anything is recorded for approval.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { approvalToShow, standingHostsOf } from '../../src/app/approval/plan-view.js';
import { applyWorkspace } from '../../src/app/provision/apply-workspace.js';
import { planForApproval } from '../../src/app/provision/provision.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { renderApprovalText, renderMarkdown, viewWorkflow } from '../../src/domain/render.js';
import { createWorkflow, type Workflow } from '../../src/domain/workflow.js';
import { LEDGER_PATHS, readPins, serializeRecord } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { standinPath } from '../support/tofu-standin.js';
import { T0 } from '../support/workflows.js';

const run = promisify(execFile);
const DB_PASSWORD = 'hunter2-but-much-longer-0123';

/** Three resources: web1 (replaced when its image changes), web2, db (whose input is a sensitive variable). */
function config(hosts: { web2: boolean; web3: boolean }) {
  return {
    variable: {
      ansible_inventory: { type: 'any' },
      web1_image: { type: 'string' },
      db_password: { type: 'string', sensitive: true },
    },
    resource: {
      terraform_data: {
        web1: { input: 'web1', triggers_replace: '${var.web1_image}' },
        ...(hosts.web2 ? { web2: { input: 'web2' } } : {}),
        ...(hosts.web3 ? { web3: { input: 'web3' } } : {}),
        db: { input: '${var.db_password}' },
      },
    },
    output: { ansible_inventory: { value: '${var.ansible_inventory}' } },
  };
}

const inventory = (names: string[]) => ({
  all: { hosts: Object.fromEntries(names.map((n) => [n, { ansible_host: `127.0.9.${n.slice(-1)}` }])) },
});
const KEY = Buffer.concat([Buffer.from('\0\0\0\x0bssh-ed25519\0\0\0\x20', 'latin1'), Buffer.alloc(32, 7)]).toString(
  'base64',
);

describe('the plan view and the destroy guard, before approval', () => {
  let root: string;
  let ws: string;
  let store: MemoryLedgerStore;
  let app: AppContext;
  const workflowId = 'fleet-1';

  async function tofu(...args: string[]) {
    await run(standinPath, args, { cwd: ws });
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'exocomp-planview-'));
    ws = join(root, 'ws');
    await mkdir(ws);
    // The applied state: web1, web2 and db, tf:fleet naming web1 and web2, both pinned.
    await writeFile(join(ws, 'main.tf.json'), JSON.stringify(config({ web2: true, web3: false })));
    await writeFile(
      join(ws, 'terraform.tfvars.json'),
      JSON.stringify({
        web1_image: 'img-1',
        db_password: 'old-password-1',
        ansible_inventory: inventory(['web1', 'web2']),
      }),
    );
    await tofu('init', '-input=false', '-no-color');
    await tofu('apply', '-auto-approve', '-input=false', '-no-color');
    // The change under review: web1's image (a replace), web2 gone, web3 new, the db password changed.
    await writeFile(join(ws, 'main.tf.json'), JSON.stringify(config({ web2: false, web3: true })));
    await writeFile(
      join(ws, 'terraform.tfvars.json'),
      JSON.stringify({ web1_image: 'img-2', db_password: DB_PASSWORD, ansible_inventory: inventory(['web1', 'web3']) }),
    );
    const workflow: Workflow = createWorkflow({
      id: workflowId,
      workspace: { path: 'ws', name: 'fleet' },
      playbook: 'site.yml',
      requester: 'alice',
      trigger: { kind: 'local' },
      options: { sshWaitMs: 1000, onboardUser: 'exocomp', check: false },
      requireApproval: true,
      now: T0,
    });
    store = new MemoryLedgerStore({
      files: {
        [LEDGER_PATHS.workflow(workflowId)]: serializeRecord(workflow),
        [LEDGER_PATHS.inventoryFile('fleet')]: JSON.stringify(inventory(['web1', 'web2'])),
        [LEDGER_PATHS.knownHosts]: `127.0.9.1 ssh-ed25519 ${KEY}\n127.0.9.2 ssh-ed25519 ${KEY}\n`,
      },
    });
    app = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => T0,
      cwd: root,
      env: {},
      progress: new RecordingProgress(),
    };
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const inputs = (extra: { allowDestroy?: boolean } = {}) => ({
    tofuBinary: standinPath,
    runSecrets: {},
    rotateHostKeys: [],
    secrets: new SecretRegistry(),
    ...extra,
  });

  it('without allow-destroy: refused after the plan, naming the replaced and destroyed hosts’ addresses; nothing recorded', async () => {
    const before = store.history().length;
    const refusal = planForApproval(app, workflowId, inputs());
    await expect(refusal).rejects.toMatchObject({ kind: 'approval' });
    const error = (await refusal.catch((e: unknown) => e)) as Error & { help: string };
    expect(error.message).toContain('terraform_data.web1: host web1 replaced');
    expect(error.message).toContain('terraform_data.web2: host web2 destroyed');
    expect(error.message).not.toContain('web3');
    expect(error.help).toContain('allow-destroy');
    expect(store.history().length).toBe(before);
    expect((await approvalToShow(app, workflowId)).workflow.state).toBe('created');
  });

  it('with allow-destroy: recorded for approval with its view; every address and action, the pins to retire, no secret', async () => {
    const workflow = await planForApproval(app, workflowId, inputs({ allowDestroy: true }));
    expect(workflow.state).toBe('awaiting-approval');
    const shown = await approvalToShow(app, workflowId);
    expect(shown.planView?.fingerprint).toBe(workflow.approval.planFingerprint);
    const view = viewWorkflow(shown.workflow, T0);
    const text = renderApprovalText(view, shown.planView);
    const markdown = renderMarkdown(view, { planView: shown.planView }).replace(/\\(.)/g, '$1');
    for (const rendered of [text, markdown]) {
      expect(rendered).toMatch(/replace\s*\|?\s*`?terraform_data\.web1`?.*forced by triggers_replace/);
      expect(rendered).toMatch(/destroy\s*\|?\s*`?terraform_data\.web2`?.*no longer in the configuration/);
      expect(rendered).toMatch(/create\s*\|?\s*`?terraform_data\.web3/);
      expect(rendered).toMatch(/update\s*\|?\s*`?terraform_data\.db/);
      expect(rendered).toMatch(/web1`? \|? ?replaced: new host key, onboarded again; pins retired: 127\.0\.9\.1/);
      expect(rendered).toMatch(/web2`? \|? ?destroyed: leaves tf:fleet; pins retired: 127\.0\.9\.2/);
      expect(rendered).toMatch(/web3`? \|? ?created: will be onboarded/);
      expect(rendered).not.toContain(DB_PASSWORD);
      expect(rendered).not.toContain('old-password-1');
    }
    const progress = (app.progress as RecordingProgress).events.map((e) => JSON.stringify(e)).join('\n');
    expect(progress).toContain('terraform_data.web2');
    expect(progress).not.toContain(DB_PASSWORD);
  });

  it('the approved apply retires what the view said: the replaced host’s pin and the destroyed host’s', async () => {
    const workflow = await planForApproval(app, workflowId, inputs({ allowDestroy: true }));
    await applyWorkspace(app, {
      workspacePath: 'ws',
      name: 'fleet',
      tofuBinary: standinPath,
      secrets: new SecretRegistry(),
      workflowId,
      approvedFingerprint: workflow.approval.planFingerprint!,
      guard: { allowDestroy: false },
      info: () => {},
      warn: () => {},
    });
    const snapshot = await store.read();
    expect(readPins(snapshot).map((p) => p.name)).toEqual([]);
    expect(standingHostsOf(snapshot, 'fleet').map((h) => h.name)).toEqual(['web1', 'web3']);
  });

  it('a protected address touched is refused even with allow-destroy; the policy’s own allow-destroy lets hosts go', async () => {
    await mkdir(join(ws, '.exocomp'));
    await writeFile(join(ws, '.exocomp', 'policy.yml'), 'protect:\n  - terraform_data.db\n');
    const protectedRefusal = await planForApproval(app, workflowId, inputs({ allowDestroy: true })).catch(
      (e: unknown) => e,
    );
    expect(protectedRefusal).toMatchObject({ kind: 'approval' });
    expect((protectedRefusal as Error).message).toContain(
      'terraform_data.db: update of an address protected by "terraform_data.db"',
    );
    expect((protectedRefusal as Error).message).not.toContain('web1');

    await writeFile(join(ws, '.exocomp', 'policy.yml'), 'allow-destroy: true\nmax-destroy: 5\n');
    expect((await planForApproval(app, workflowId, inputs())).state).toBe('awaiting-approval');
  });

  it('a policy file that is not the documented shape is refused before anything is recorded', async () => {
    await mkdir(join(ws, '.exocomp'));
    await writeFile(join(ws, '.exocomp', 'policy.yml'), 'allow-destroy: yes please\n');
    await expect(planForApproval(app, workflowId, inputs({ allowDestroy: true }))).rejects.toMatchObject({
      kind: 'usage',
      message: expect.stringContaining('.exocomp/policy.yml is not a valid policy (allow-destroy'),
    });
  });
});
