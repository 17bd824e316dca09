/**
 * Starting a workflow (recorded with its standing inventory in one commit) and
 * planning for approval. continueWorkflow (continue-workflow.ts) decides when
 * either happens.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import { WORKFLOW_ID_MAX_LENGTH } from '../../domain/names.js';
import { summarizePlan } from '../../domain/plan.js';
import { renderPlanViewText } from '../../domain/plan-view.js';
import { INVENTORY_SCHEMA_VERSION, type InventoryRecord } from '../../domain/standing-inventory.js';
import {
  awaitApproval,
  createWorkflow,
  startStep,
  type ChainOptions,
  type Trigger,
  type Workflow,
} from '../../domain/workflow.js';
import { readInventoryRecord, readWorkflow, RecordWrites, requireWorkflow } from '../../ledger/records.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { locateTofu } from '../../adapters/tofu.js';
import type { AppContext } from '../runtime/context.js';
import type { Holder } from '../runtime/lease.js';
import {
  checkStateBackend,
  formatPlanSummary,
  openTofu,
  planWorkspace,
  requireWorkspaceDir,
} from './apply-workspace.js';
import type { RunInputs } from '../plays/run-inputs.js';
import { previewWorkflowConfiguration } from '../approval/config-preview.js';
import { viewAndGuardPlan } from '../approval/plan-view.js';
import { checkPlaybookFile } from './input-checks.js';
import { saveWorkflow } from './workflows.js';

export interface ProvisionRequest {
  workspacePath: string;
  workspaceName: string;
  playbook: string;
  options: ChainOptions;
  requireApproval: boolean;
  trigger: Trigger;
  requester?: string;
}

/** `<name>-<8 hex>`, the name shortened so the id stays within WORKFLOW_ID_MAX_LENGTH. */
export function newWorkflowId(name: string): string {
  const suffix = `-${randomBytes(4).toString('hex')}`;
  return `${name.slice(0, WORKFLOW_ID_MAX_LENGTH - suffix.length)}${suffix}`;
}

/** What a new workflow needs before anything is written: bad input leaves the ledger untouched. */
export async function checkProvision(
  app: AppContext,
  request: ProvisionRequest,
  inputs: Pick<RunInputs, 'tofuBinary' | 'allowLocalState'>,
): Promise<void> {
  // A wrong playbook path is refused here, in every face, before the first ledger write and before any tofu call.
  checkPlaybookFile(request.playbook, 'the playbook', app.cwd);
  if (request.options.onboardPlaybook)
    checkPlaybookFile(request.options.onboardPlaybook, 'the onboard playbook', app.cwd);
  await requireWorkspaceDir(request.workspacePath, app.cwd);
  await checkStateBackend(app, request.workspacePath, inputs.allowLocalState ?? false);
  await locateTofu({ tofuBinary: inputs.tofuBinary, env: app.env });
}

/**
 * Records a new workflow (and registers tf:<name> when it is new) in one
 * commit; checkProvision first. With `startApplyAs`, a run that goes straight
 * into the chain, that commit also starts apply under that holder (write-ahead,
 * one write fewer).
 */
export async function recordProvision(
  app: AppContext,
  request: ProvisionRequest,
  id: string,
  startApplyAs?: Holder,
): Promise<Workflow> {
  return app.store.update((snapshot) => {
    if (readWorkflow(snapshot, id))
      throw new ExocompError('usage', `workflow ${id} already exists`, { help: 'choose another --id, or resume it' });
    const created = createWorkflow({
      id,
      workspace: { path: request.workspacePath, name: request.workspaceName },
      playbook: request.playbook,
      requester: request.requester ?? userInfo().username,
      trigger: request.trigger,
      options: request.options,
      requireApproval: request.requireApproval,
      now: app.now(),
    });
    const workflow = startApplyAs ? startStep(created, 'apply', startApplyAs.lease(app.now()), app.now()) : created;
    const writes = new RecordWrites().workflow(workflow);
    if (!readInventoryRecord(snapshot, request.workspaceName)) {
      const record: InventoryRecord = {
        schemaVersion: INVENTORY_SCHEMA_VERSION,
        name: request.workspaceName,
        registeredAt: app.now().toISOString(),
        workspacePath: request.workspacePath,
      };
      writes.inventoryRecord(record);
    }
    const started = startApplyAs ? `; apply running (${startApplyAs.id})` : '';
    return {
      writes,
      message: `${id}: created for ${request.workspaceName} (${request.playbook})${started}`,
      result: workflow,
    };
  });
}

/**
 * Plans without applying and records `awaiting-approval` with the plan's
 * fingerprint: what is approved is this plan, and the apply refuses another.
 * With `keepPlanFile` the saved plan is written there (for an apply job to
 * carry), otherwise it is discarded.
 */
export async function planForApproval(
  app: AppContext,
  workflowId: string,
  inputs: RunInputs,
  keepPlanFile?: string,
): Promise<Workflow> {
  const workflow = requireWorkflow(await app.store.read(), workflowId);
  const info = (message: string) =>
    app.progress.emit({ type: 'info', message: inputs.secrets.redact(message), step: 'apply' });
  const tofu = await openTofu(app, {
    workspacePath: workflow.workspace.path,
    tofuBinary: inputs.tofuBinary,
    secrets: inputs.secrets,
    info,
  });
  const scratch = await makePrivateDir('plan');
  try {
    const plan = await planWorkspace(tofu, workflow.options.vars, keepPlanFile ?? join(scratch, 'exocomp.tfplan'));
    const summary = formatPlanSummary(summarizePlan(plan.plan));
    info(`plan ${summary} · fingerprint ${plan.fingerprint.slice(0, 16)}`);
    // Before anything binds an approval: a plan the destroy guard refuses is never recorded.
    const planView = await viewAndGuardPlan(app, { workspace: workflow.workspace.name, workflowId }, plan, {
      workspaceDir: await requireWorkspaceDir(workflow.workspace.path, app.cwd),
      allowDestroy: inputs.allowDestroy ?? false,
      protect: inputs.protect ?? [],
      stage: 'approval',
    });
    info(renderPlanViewText(planView));
    const config = await previewWorkflowConfiguration(app, workflow, inputs, { info });
    if (config.kind === 'previewed')
      info(`configuration preview · fingerprint ${config.fingerprint.slice(0, 16)}\n${config.preview}`);
    else info(config.reason);
    return await saveWorkflow(
      app,
      workflowId,
      (w) =>
        awaitApproval(w, app.now(), {
          fingerprint: plan.fingerprint,
          summary,
          ...(config.kind === 'previewed'
            ? { configuration: { fingerprint: config.fingerprint, preview: config.preview } }
            : {}),
        }),
      `${workflowId}: awaiting approval (plan ${summary}${config.kind === 'previewed' ? ', configuration previewed' : ''})`,
      () => ({ writes: new RecordWrites().planView(planView), message: 'plan view recorded' }),
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
