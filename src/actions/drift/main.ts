/**
 * The drift check as a step: the plan and the check-mode play of a workspace
 * in one report (job summary, outputs), recorded in the ledger, and the sticky
 * "drift" issue of the workspace opened, updated or closed.
 */
import * as core from '@actions/core';
import { convertCron } from '../../domain/cron.js';
import { driftExitCode, driftHeadline, driftVerdict } from '../../domain/drift.js';
import { renderDriftMarkdown, renderDriftText } from '../../domain/drift-render.js';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { defaultWorkspaceName, parseInventoryRef, parseWorkspaceName } from '../../domain/names.js';
import { parseScheduleName } from '../../domain/schedule.js';
import { checkDrift } from '../../app/drift.js';
import { parseMapping } from '../../app/mappings.js';
import { publishDriftIssue } from '../../platform/github/drift-issue.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction('drift', async (session) => {
  const s = session.settings;
  let name = s['workspace-name'] === undefined ? defaultWorkspaceName(s.workspace) : parseWorkspaceName(s['workspace-name']);
  if (s.target !== undefined) {
    const ref = parseInventoryRef(s.target);
    if (ref.kind !== 'standing') throw new UsageError(`target ${JSON.stringify(s.target)} is not a standing inventory`, 'write target: tf:<workspace name>');
    name = ref.name;
  }
  const vars = s.vars === undefined ? undefined : parseMapping(s.vars, 'the vars input');
  // A scheduled run records its cron and when it fired, so missed ticks show.
  const schedule =
    s['schedule-name'] !== undefined && session.run.schedule !== undefined
      ? { name: parseScheduleName(s['schedule-name']), cron: convertCron(`0 ${session.run.schedule}`).cron }
      : undefined;
  const app = await openLedger(session, s, { write: true });
  const inputs = await githubRunInputs(session, s);
  const info = (message: string) => session.progress.emit({ type: 'info', message: inputs.secrets.redact(message) });
  const report = await checkDrift(app, {
    workspacePath: s.workspace,
    name,
    playbook: s.playbook,
    ...(vars ? { vars } : {}),
    ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
    ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
    remoteUser: s['remote-user'],
    secrets: inputs.secrets,
    ...(schedule ? { schedule } : {}),
    runUrl: session.run.runUrl,
    info,
    // Host output is text, never a workflow command.
    onOutput: (line) => info(line.trimEnd()),
    signal: session.interrupt,
  });
  const redact = (text: string) => inputs.secrets.redact(text);
  info(renderDriftText(report).trimEnd());
  session.progress.flush();
  const verdict = driftVerdict(report);
  core.setOutput('verdict', verdict);
  core.setOutput('exit-code', String(driftExitCode(report)));
  core.setOutput('headline', redact(driftHeadline(report)));
  await core.summary.addRaw(redact(renderDriftMarkdown(report)), true).write();
  if (s.issue) {
    try {
      const issue = await publishDriftIssue(session.github, session.run.repository, report, { author: s['issue-author'], runUrl: session.run.runUrl, redact });
      if (issue.number !== undefined) core.setOutput('issue', String(issue.number));
      if (issue.action !== 'none') info(`drift issue #${issue.number}: ${issue.action === 'open' ? 'opened' : issue.action === 'update' ? 'updated' : 'closed'}`);
    } catch (error) {
      if (!(error instanceof ExocompError) || error.kind !== 'permission') throw error;
      // The report is in the summary; a token without issues: write loses only the issue.
      core.warning(redact(`the drift issue was not updated: ${error.message}`));
    }
  }
  if (verdict === 'failed')
    throw new ExocompError('tool-failed', redact(`the drift check failed: ${driftHeadline(report)}`), { help: 'the report above says which half failed and why' });
  if (verdict === 'drift' && s['fail-on-drift'])
    throw new ExocompError('play-failed', redact(`drift found: ${driftHeadline(report)}`), { help: 'converge (and apply) to remove it' });
});
