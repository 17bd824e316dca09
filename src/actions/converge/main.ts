/**
 * A play against a standing inventory (the scheduled converge): fails closed
 * when tf:<name> is unusable, hands the workspace's sealed outputs to the play
 * only because the target names it. Without `shard` it reads the ledger and
 * never writes it. With `shard: i/N` it converges that shard and records its
 * result; with `fold-shards: N` (the final job of a matrix) it folds the run's
 * shard results into one converge record and summary. With `concurrency-key`
 * the play runs holding that ledger lease (the CLI's --concurrency-key).
 */
import * as core from '@actions/core';
import { renderConvergeRunMarkdown, renderConvergeRunText } from '../../domain/converge-record.js';
import { escapeMarkdown } from '../../domain/drift-render.js';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { parseShardNumber, parseShardSpec } from '../../domain/shard.js';
import { convergeShard, foldConvergeShards } from '../../app/converge-shards.js';
import { playFailureSummary } from '../../app/play.js';
import { runStandingPlay } from '../../app/standing-play.js';
import { withConcurrencyLock } from '../../app/concurrency.js';
import { parseConcurrencyKey } from '../../domain/lock.js';
import { ciHolder, ciHolderProbe } from '../../platform/github/holder.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction('converge', async (session) => {
  const s = session.settings;
  const ref = parseInventoryRef(s.target);
  if (ref.kind !== 'standing') throw new UsageError(`target ${JSON.stringify(s.target)} is not a standing inventory`, 'write target: tf:<workspace name>');
  const shard = s.shard === undefined ? undefined : parseShardSpec(s.shard);
  const foldShards = s['fold-shards'] === undefined ? undefined : parseShardNumber(s['fold-shards'], 'fold-shards');
  if (shard && foldShards) throw new UsageError('shard and fold-shards go in different jobs', 'give shard to each matrix job, fold-shards to the final job');
  // Shards of one run share the run id; a re-run attempt of one shard replaces its own result.
  const runId = String(session.run.runId);
  const info = (message: string) => session.progress.emit({ type: 'info', message: session.secrets.redact(message) });

  if (foldShards !== undefined) {
    const app = await openLedger(session, s, { write: true });
    const run = await foldConvergeShards(app, { name: ref.name, runId, shards: foldShards });
    info(renderConvergeRunText(ref.name, run));
    session.progress.flush();
    core.setOutput('hosts', String(run.hosts.length));
    core.setOutput('state', run.ok ? 'converged' : 'failed');
    await core.summary.addRaw(renderConvergeRunMarkdown(ref.name, run, escapeMarkdown), true).write();
    if (!run.ok) throw new ExocompError('play-failed', renderConvergeRunText(ref.name, run), { help: 'each shard job’s log shows its play' });
    return;
  }

  const key = s['concurrency-key'] === undefined ? undefined : parseConcurrencyKey(s['concurrency-key']);
  const app = await openLedger(session, s, { write: shard !== undefined || key !== undefined });
  const inputs = await githubRunInputs(session, s);
  // One argument per line (as `schedule add` writes them) keeps spaces inside an argument.
  const passthrough =
    s.args === undefined
      ? []
      : s.args
          .split(s.args.includes('\n') ? /\n/ : /\s+/)
          .map((arg) => arg.trim())
          .filter((arg) => arg !== '');
  const request = {
    name: ref.name,
    playbook: s.playbook,
    remoteUser: s['remote-user'],
    ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
    ...(passthrough.length > 0 ? { passthrough } : {}),
    secrets: inputs.secrets,
    signal: session.interrupt,
    info: (message: string) => session.progress.emit({ type: 'info', message: inputs.secrets.redact(message) }),
    // The play's output (hosts' output in it) is text, never a workflow command.
    onOutput: (line: string) => session.progress.emit({ type: 'info', message: inputs.secrets.redact(line.trimEnd()) }),
  };
  const play = () =>
    shard
      ? convergeShard(app, { ...request, shard, runId, runUrl: session.run.runUrl }).then(({ outcome: o, result }) => ({ outcome: o, hostCount: result.hosts.length }))
      : runStandingPlay(app, request);
  const lease = key && {
    key,
    waitMs: s['concurrency-wait'],
    purpose: `converge ${s.playbook} on ${s.target} (run ${runId})`,
    holder: ciHolder(session.run),
    probe: ciHolderProbe(session.github, session.run),
    info,
    warn: (message: string) => session.progress.emit({ type: 'warning', message: inputs.secrets.redact(message) }),
  };
  const { outcome, hostCount } = lease ? await withConcurrencyLock(app, lease, play) : await play();
  session.progress.flush();
  const where = shard ? ` (shard ${s.shard})` : '';
  core.setOutput('hosts', String(hostCount));
  core.setOutput('state', outcome.code === 0 ? 'converged' : 'failed');
  await core.summary
    .addRaw(
      `### exocomp converge \`${s.playbook}\` on \`${s.target}\`${where}\n\n${outcome.code === 0 ? '✓ converged' : `✗ ${inputs.secrets.redact(playFailureSummary(outcome))}`} · ${hostCount} host(s)`,
      true,
    )
    .write();
  if (outcome.code !== 0) {
    throw new ExocompError('play-failed', `the play failed: ${playFailureSummary(outcome)}`, { help: 'the play’s output is in the log above' });
  }
});
