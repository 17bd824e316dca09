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
  if (result.kind === 'folded') {
    const text = renderConvergeRunText(result.name, result.run);
    session.progress.emit({ type: 'info', message: secrets.redact(text) });
    session.progress.flush();
    platform.setOutput('hosts', String(result.run.hosts.length));
    platform.setOutput('state', result.run.ok ? 'converged' : 'failed');
    await platform.writeSummary(`${renderConvergeRunMarkdown(result.name, result.run, escapeMarkdown)}${footer}`);
    if (!result.run.ok) throw new ExocompError('play-failed', text, { help: 'each shard job’s log shows its play' });
    return;
  }
  session.progress.flush();
  const { playbook, target } = session.settings;
  const ok = result.outcome.code === 0;
  const where = job.kind === 'play' && job.shard ? ` (shard ${formatShard(job.shard.spec)})` : '';
  const hostCount = result.hostCount ?? 0;
  platform.setOutput('hosts', String(hostCount));
  platform.setOutput('state', ok ? 'converged' : 'failed');
  const verdict = ok ? '✓ converged' : `✗ ${secrets.redact(playFailureSummary(result.outcome))}`;
  await platform.writeSummary(
    `### exocomp converge \`${playbook}\` on \`${target}\`${where}\n\n${verdict} · ${hostCount} host(s)${footer}`,
  );
  if (!ok)
    throw new ExocompError('play-failed', `the play failed: ${playFailureSummary(result.outcome)}`, {
      help: 'the play’s output is in the log above',
    });
}
