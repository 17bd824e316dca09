/**
 * A play against a standing inventory (the scheduled converge): fails closed
 * when tf:<name> is unusable, hands the workspace's sealed outputs to the play
 * only because the target names it. Reads the ledger, never writes it.
 */
import * as core from '@actions/core';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { playFailureSummary } from '../../app/play.js';
import { runStandingPlay } from '../../app/standing-play.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction('converge', async (session) => {
  const s = session.settings;
  const ref = parseInventoryRef(s.target);
  if (ref.kind !== 'standing') throw new UsageError(`target ${JSON.stringify(s.target)} is not a standing inventory`, 'write target: tf:<workspace name>');
  const app = await openLedger(session, s, { write: false });
  const inputs = await githubRunInputs(session, s);
  const passthrough = s.args === undefined ? [] : s.args.split(/\s+/).filter((arg) => arg !== '');
  const { outcome, hostCount } = await runStandingPlay(app, {
    name: ref.name,
    playbook: s.playbook,
    remoteUser: s['remote-user'],
    ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
    ...(passthrough.length > 0 ? { passthrough } : {}),
    secrets: inputs.secrets,
    signal: session.interrupt,
    info: (message) => session.progress.emit({ type: 'info', message: inputs.secrets.redact(message) }),
    // The play's output (hosts' output in it) is text, never a workflow command.
    onOutput: (line) => session.progress.emit({ type: 'info', message: inputs.secrets.redact(line.trimEnd()) }),
  });
  session.progress.flush();
  core.setOutput('hosts', String(hostCount));
  core.setOutput('state', outcome.code === 0 ? 'converged' : 'failed');
  await core.summary
    .addRaw(`### exocomp converge \`${s.playbook}\` on \`${s.target}\`\n\n${outcome.code === 0 ? '✓ converged' : `✗ ${inputs.secrets.redact(playFailureSummary(outcome))}`} · ${hostCount} host(s)`, true)
    .write();
  if (outcome.code !== 0) {
    throw new ExocompError('play-failed', `the play failed: ${playFailureSummary(outcome)}`, { help: 'the play’s output is in the log above' });
  }
});
