/**
 * The plan view a reviewer approves (domain/plan-view.ts), built from the
 * saved plan and the standing inventory, and the destroy guard judged on it
 * (domain/destroy-policy.ts) before anything is recorded for approval.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  parseDestroyPolicy,
  judgeDestroy,
  destroyRefusal,
  POLICY_FILE,
  type GuardStage,
  type RunGuard,
} from '../../domain/destroy-policy.js';
import { ExocompError } from '../../domain/errors.js';
import { deriveHosts, knownHostsName, parseInventory } from '../../domain/inventory.js';
import type { PlanJson } from '../../domain/plan.js';
import { buildPlanView, type PlanView, type StandingHost } from '../../domain/plan-view.js';
import type { Workflow } from '../../domain/workflow.js';
import { readInventoryFile, readPins, readPlanView, requireWorkflow } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';

/** The hosts tf:<name> names now, each with the pins recorded for its address; none before the first apply. */
export function standingHostsOf(snapshot: LedgerSnapshot, name: string): StandingHost[] {
  const text = readInventoryFile(snapshot, name);
  if (text === undefined) return [];
  const pins = readPins(snapshot);
  return deriveHosts(parseInventory(JSON.parse(text), `tf:${name}`)).map((host) => {
    const pinName = knownHostsName(host.address, host.port);
    return {
      name: host.name,
      pins: host.local ? [] : [...new Set(pins.filter((p) => p.name === pinName).map((p) => p.name))],
    };
  });
}

/** The workspace's destroy policy (`.exocomp/policy.yml`), the default when there is none. */
export async function readDestroyPolicy(workspaceDir: string) {
  let text: string | undefined;
  try {
    text = await readFile(join(workspaceDir, POLICY_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ExocompError('usage', `cannot read ${POLICY_FILE}: ${(error as Error).message}`, {
        help: `make ${POLICY_FILE} in the workspace a readable file, or remove it`,
      });
    }
  }
  return parseDestroyPolicy(text);
}

/** What a plan is made for: the workspace (tf:<name>), and the workflow (or, outside one, the workspace) it is viewed for. */
export interface PlanTarget {
  workspace: string;
  workflowId: string;
}

/**
 * The destroy guard (issue 27 item 2, issue 36 item 4): the one decision on whether a plan may be recorded for approval
 * or applied. Its view, refused unless the policy and the run (`allowDestroy`, `protect`) let it through. Nothing is
 * written here.
 */
export async function viewAndGuardPlan(
  app: AppContext,
  target: PlanTarget,
  plan: { plan: PlanJson; fingerprint: string },
  run: RunGuard & { workspaceDir: string; stage: GuardStage },
): Promise<PlanView> {
  const snapshot = await app.store.read();
  const view = buildPlanView({
    plan: plan.plan,
    fingerprint: plan.fingerprint,
    workflowId: target.workflowId,
    workspace: target.workspace,
    currentHosts: standingHostsOf(snapshot, target.workspace),
  });
  const verdict = judgeDestroy(view, await readDestroyPolicy(run.workspaceDir), run);
  if (!verdict.allowed) throw destroyRefusal(target.workspace, verdict, run.stage);
  return view;
}

/**
 * The view a published status shows beside the workflow (job summary, PR comment, MR note). Publishing is optional,
 * so a view that cannot be read is a warning there, never the job's failure; `approval show` names the corruption.
 */
export async function planViewToPublish(
  app: AppContext,
  workflowId: string,
  warn: (message: string) => void,
): Promise<PlanView | undefined> {
  try {
    return readPlanView(await app.store.read(), workflowId);
  } catch (error) {
    warn(`the plan view is not shown: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/** `approval show <id>`: the workflow and the view of the plan its approval binds (undefined when none was recorded). */
export async function approvalToShow(
  app: AppContext,
  workflowId: string,
): Promise<{ workflow: Workflow; planView: PlanView | undefined }> {
  const snapshot = await app.store.read();
  const workflow = requireWorkflow(snapshot, workflowId);
  const planView = readPlanView(snapshot, workflowId);
  // Both are written in one commit: a view of another plan was not written by exocomp.
  if (planView !== undefined && planView.fingerprint !== workflow.approval.planFingerprint) {
    throw new ExocompError(
      'ledger-record',
      `the plan view recorded for ${workflowId} is of another plan than the one its approval binds`,
      {
        help: 'inspect the plan-views record on the ledger branch (git log -p); plan the workflow again to replace it',
      },
    );
  }
  return { workflow, planView };
}
