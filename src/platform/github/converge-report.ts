/**
 * A converge job's result on GitHub: the outputs (`hosts`, `state`), the job
 * summary, and the job failed when a host failed or a shard never reported.
 */
import { renderConvergeRunMarkdown, renderConvergeRunText } from '../../domain/converge-record.js';
import { escapeMarkdown } from '../../domain/drift-render.js';
import { ExocompError } from '../../domain/errors.js';
import { describeMissedTicks } from '../../domain/schedule-fires.js';
import { formatShard } from '../../domain/shard.js';
import type { ConvergeJob, ConvergeResult } from '../../app/converge/converge.js';
import { playFailureSummary } from '../../app/plays/play.js';
import type { Session } from './session.js';

export async function publishConverge(
  session: Session<'converge'>,
  job: ConvergeJob,
  result: ConvergeResult,
): Promise<void> {
  const { platform, secrets } = session;
  // Ticks of the schedule that never ran: an annotation, and a line under the summary.
  const missed = result.ticks && describeMissedTicks(result.ticks.schedule, result.ticks.missed);
  if (missed) platform.log.warning(missed);
  const footer = missed ? `\n\n⚠ ${missed}` : '';
  // A fold, or a rollout in one job that folded its own run.
  const folded =
    result.kind === 'folded'
      ? { name: result.name, run: result.run }
      : result.folded && { name: result.shard?.name ?? '', run: result.folded };
  if (folded) {
    const text = renderConvergeRunText(folded.name, folded.run);
    session.progress.emit({ type: 'info', message: secrets.redact(text) });
    session.progress.flush();
    platform.setOutput('hosts', String(folded.run.hosts.length));
    platform.setOutput('state', folded.run.ok ? 'converged' : 'failed');
    await platform.writeSummary(`${renderConvergeRunMarkdown(folded.name, folded.run, escapeMarkdown)}${footer}`);
    if (!folded.run.ok) throw new ExocompError('play-failed', text, { help: 'each shard job’s log shows its play' });
    return;
  }
  if (result.kind === 'folded') return;
  session.progress.flush();
  const { playbook, target } = session.settings;
  const stopped = result.rolloutStopped;
  const ok = result.outcome.code === 0 && stopped === undefined;
  const where = job.kind === 'play' && job.shard ? ` (shard ${formatShard(job.shard.spec)})` : '';
  const hostCount = result.hostCount ?? 0;
  platform.setOutput('hosts', String(hostCount));
  platform.setOutput('state', ok ? 'converged' : 'failed');
  const why = stopped
    ? `the rollout stopped in batch ${stopped.batch + 1}: ${stopped.failures} failed host(s), more than the ${stopped.allowed} allowed`
    : playFailureSummary(result.outcome);
  const verdict = ok ? '✓ converged' : `✗ ${secrets.redact(why)}`;
  await platform.writeSummary(
    `### exocomp converge \`${playbook}\` on \`${target}\`${where}\n\n${verdict} · ${hostCount} host(s)${footer}`,
  );
  if (!ok)
    throw new ExocompError('play-failed', stopped ? why : `the play failed: ${why}`, {
      help: 'the play’s output is in the log above',
    });
}
