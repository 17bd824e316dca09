/**
 * The drift check as a step: the plan and the check-mode play of a workspace
 * in one report (job summary, outputs), recorded in the ledger, and the sticky
 * "drift" issue of the workspace opened, updated or closed.
 */
import { driftTarget, runDriftCheck } from '../../app/drift/drift-job.js';
import { parseMapping } from '../../app/plays/mappings.js';
import { playInputs } from '../../app/plays/run-inputs.js';
import { githubDriftIssueTarget, publishDrift } from '../../platform/github/drift-issue.js';
import { scheduleTick } from '../../platform/github/run-context.js';
import { githubRunInputs, openLedger, playReporting, runAction } from '../../platform/github/session.js';

await runAction('drift', async (session) => {
  const s = session.settings;
  const target = driftTarget({
    workspacePath: s.workspace,
    workspaceName: s['workspace-name'],
    target: s.target,
    schedule: scheduleTick(session.run, s['schedule-name']),
    targetName: 'target',
  });
  const vars = s.vars === undefined ? undefined : parseMapping(s.vars, 'the vars input');
  const app = await openLedger(session, s, { provePushAccess: true });
  const inputs = await githubRunInputs(session, s);
  const result = await runDriftCheck(app, target, {
    workspacePath: s.workspace,
    playbook: s.playbook,
    ...(vars ? { vars } : {}),
    ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
    ...playInputs(inputs),
    remoteUser: s['remote-user'],
    runUrl: session.run.runUrl,
    failOnDrift: s['fail-on-drift'],
    issue: s.issue
      ? githubDriftIssueTarget(session.github, session.run.repository, s['issue-author'], session.run.runUrl)
      : undefined,
    ...playReporting(session),
  });
  await publishDrift(session, result);
});
