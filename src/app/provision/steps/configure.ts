/** Step 4: the user's playbook against tf:<name>, as the fleet user, inside the run boundary. */
import { UsageError } from '../../../domain/errors.js';
import type { StepContext } from './step.js';
import { playFailedError } from '../../plays/play.js';
import { playProgress } from '../../runtime/progress.js';
import { runStandingPlay } from '../../plays/standing-play.js';
import { configureUser, runReach } from '../../plays/run-inputs.js';
import { fleetCredential } from '../../keys/user-ca.js';

export async function configureStep({
  app,
  workflow,
  inputs,
  info,
  signal,
  handedOn,
  deferClose,
}: StepContext): Promise<string> {
  const remoteUser = configureUser(workflow);
  const fleetKeyPath = await fleetCredential(app.store, inputs, { user: remoteUser, keyId: workflow.id });
  if (!fleetKeyPath)
    throw new UsageError(
      'configure needs the fleet key',
      'pass --fleet-key <private key file> or --user-ca-key <file>',
    );
  const { bastion } = runReach(inputs, workflow);
  const { outcome, hostCount } = await runStandingPlay(app, {
    name: workflow.workspace.name,
    playbook: workflow.playbook,
    remoteUser,
    fleetKeyPath,
    fleetAgent: handedOn.fleetAgent,
    fleetConnections: handedOn.fleetConnections,
    sealKey: inputs.sealKey,
    runSecrets: inputs.runSecrets,
    ...(bastion ? { bastion } : {}),
    check: workflow.options.check,
    limit: workflow.options.limit,
    tags: workflow.options.tags,
    secrets: inputs.secrets,
    info,
    onEvent: playProgress(app.progress, 'configure'),
    signal,
    deferClose,
  });
  if (outcome.code !== 0) {
    throw playFailedError(
      'configure play',
      outcome,
      'fix the playbook or the host, then exocomp provision resume <id>',
    );
  }
  return `${workflow.playbook} converged ${hostCount} host(s)`;
}
