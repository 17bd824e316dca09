/**
 * The configuration half of a preview before approval (issue 12 item 2): the
 * configure playbook in check mode against the hosts tf:<name> already names,
 * recorded with its fingerprint beside the plan's, and repeated before the
 * apply — a playbook or a host that changed since the approval voids it.
 */
import { renderConfigurationText } from '../../domain/drift-render.js';
import { ExocompError } from '../../domain/errors.js';
import type { Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../runtime/context.js';
import { previewConfiguration } from '../drift/drift.js';
import { configureUser, type RunInputs } from '../plays/run-inputs.js';

export type ConfigurationPreview =
  { kind: 'previewed'; fingerprint: string; preview: string } | { kind: 'none'; reason: string };

/** The standing inventory and the play a preview runs: a workflow's, or the plan job's inputs (a plan-only preview). */
export interface PreviewTarget {
  name: string;
  playbook: string;
  remoteUser: string;
}

export async function previewConfigurationOf(
  app: AppContext,
  target: PreviewTarget,
  inputs: RunInputs,
  options: { info(message: string): void; signal?: AbortSignal },
): Promise<ConfigurationPreview> {
  if (!inputs.fleetKeyPath)
    return { kind: 'none', reason: 'no fleet key was given, so the configure play was not previewed' };
  const config = await previewConfiguration(app, {
    name: target.name,
    playbook: target.playbook,
    remoteUser: target.remoteUser,
    fleetKeyPath: inputs.fleetKeyPath,
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
    secrets: inputs.secrets,
    info: options.info,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (config === undefined)
    return { kind: 'none', reason: `tf:${target.name} names no hosts yet: no configuration to preview` };
  return {
    kind: 'previewed',
    fingerprint: config.fingerprint,
    preview: inputs.secrets.redact(renderConfigurationText(config)),
  };
}

export function previewWorkflowConfiguration(
  app: AppContext,
  workflow: Workflow,
  inputs: RunInputs,
  options: { info(message: string): void; signal?: AbortSignal },
): Promise<ConfigurationPreview> {
  const target = {
    name: workflow.workspace.name,
    playbook: workflow.playbook,
    remoteUser: configureUser(workflow),
  };
  return previewConfigurationOf(app, target, inputs, options);
}

/** Before an approved apply: the configuration preview must come out as it did when it was approved. */
export async function checkApprovedConfiguration(
  app: AppContext,
  workflow: Workflow,
  inputs: RunInputs,
  options: { info(message: string): void; signal?: AbortSignal },
): Promise<void> {
  const approved = workflow.approval.configFingerprint;
  if (approved === undefined) return;
  options.info('checking the configuration preview is still the one approved (check-mode configure)');
  const now = await previewWorkflowConfiguration(app, workflow, inputs, options);
  if (now.kind !== 'previewed') {
    throw new ExocompError(
      'approval',
      `the approval covers a configuration preview that cannot be repeated now: ${now.reason}`,
      {
        help: 'nothing was applied; pass the fleet key (--fleet-key, or the fleet-private-key input) so the preview can be compared',
      },
    );
  }
  if (now.fingerprint !== approved) {
    throw new ExocompError(
      'approval',
      'configuration changed since approval: the check-mode configure play now differs from the one that was approved',
      {
        help: 'nothing was applied; start a new workflow so the current plan and configuration are reviewed',
      },
    );
  }
}
