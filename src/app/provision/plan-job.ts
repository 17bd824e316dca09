/**
 * A plan job, for every face that has one: plan and record the plan as the
 * one awaiting approval (continueWorkflow, scope `plan`), or — for a preview
 * (pull requests, forks included) — a plan that writes no ledger record and
 * applies nothing. With the fleet key and the playbook, a preview also runs the
 * configure play in check mode against the hosts tf:<name> already names (the
 * ledger is then read, never written), so a reviewer sees both halves.
 */
import { join } from 'node:path';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { rm } from 'node:fs/promises';
import { summarizePlan } from '../../domain/plan.js';
import { readOnlyStore } from '../../ledger/read-only-store.js';
import { previewConfigurationOf, type ConfigurationPreview } from '../approval/config-preview.js';
import type { AppContext } from '../runtime/context.js';
import { continueWorkflow, type ContinueRequest } from './continue-workflow.js';
import { formatPlanSummary, openTofu, planWorkspace } from './apply-workspace.js';
import type { RunInputs } from '../plays/run-inputs.js';

/** What a preview plans: the workspace as the job's inputs name it, and the play it previews in check mode. */
export interface PreviewRequest {
  workspacePath: string;
  workspaceName: string;
  vars: Record<string, unknown> | undefined;
  /** The configure playbook; without it only the plan is previewed. */
  playbook: string | undefined;
  /** The user the configure play connects as (the fleet user onboarding created). */
  remoteUser: string;
}

export type PlanJobOutcome =
  | {
      kind: 'previewed';
      workspaceName: string;
      planSummary: string;
      planFingerprint: string;
      configuration: ConfigurationPreview;
    }
  /** The plan awaits approval (or there was nothing to plan): `planSummary` is the recorded one. */
  | { kind: 'planned'; planSummary: string | undefined };

export async function planJob(
  app: AppContext,
  request: Omit<ContinueRequest, 'scope' | 'gate' | 'toolCache'> & { preview?: PreviewRequest | undefined },
): Promise<PlanJobOutcome> {
  const { preview, ...continuing } = request;
  if (preview === undefined) {
    const outcome = await continueWorkflow(app, { ...continuing, scope: 'plan' });
    return { kind: 'planned', planSummary: outcome.workflow.approval.planSummary };
  }
  const info = (message: string) =>
    app.progress.emit({ type: 'info', message: request.inputs.secrets.redact(message) });
  // The saved plan holds sensitive values in clear: a private directory of this process, removed at once.
  const dir = await makePrivateDir('plan', request.ci?.scratch);
  const plan = await previewPlan(app, {
    ...preview,
    inputs: request.inputs,
    planFile: join(dir, 'exocomp.tfplan'),
    info,
  }).finally(() => rm(dir, { recursive: true, force: true }));
  info(`plan ${plan.summary} · fingerprint ${plan.fingerprint.slice(0, 16)}`);
  const configuration =
    preview.playbook === undefined
      ? ({ kind: 'none', reason: 'no playbook was given, so the configure play was not previewed' } as const)
      : await previewConfigurationOf(
          { ...app, store: readOnlyStore(app.store, 'a plan preview') },
          { name: preview.workspaceName, playbook: preview.playbook, remoteUser: preview.remoteUser },
          request.inputs,
          { info, ...(app.interrupt ? { signal: app.interrupt } : {}) },
        );
  info(
    configuration.kind === 'previewed'
      ? `configuration preview · fingerprint ${configuration.fingerprint.slice(0, 16)}\n${configuration.preview}`
      : configuration.reason,
  );
  return {
    kind: 'previewed',
    workspaceName: preview.workspaceName,
    planSummary: plan.summary,
    planFingerprint: plan.fingerprint,
    configuration,
  };
}

/** The plan's summary (`+1 ~0 -2`) and fingerprint; the saved plan goes to `planFile`. */
async function previewPlan(
  app: AppContext,
  request: {
    workspacePath: string;
    vars: Record<string, unknown> | undefined;
    inputs: RunInputs;
    planFile: string;
    info(message: string): void;
  },
): Promise<{ summary: string; fingerprint: string }> {
  const tofu = await openTofu(app, {
    workspacePath: request.workspacePath,
    tofuBinary: request.inputs.tofuBinary,
    secrets: request.inputs.secrets,
    info: request.info,
  });
  const plan = await planWorkspace(tofu, request.vars, request.planFile);
  return { summary: formatPlanSummary(summarizePlan(plan.plan)), fingerprint: plan.fingerprint };
}
