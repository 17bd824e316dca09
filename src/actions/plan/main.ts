/**
 * Step 1a: plan and record the plan as the one awaiting approval; the sealed
 * saved plan goes to the apply job as an artifact. With `plan-only`, a preview
 * that touches no ledger (pull requests, forks included).
 */
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import { runChainJob, startSettings } from '../../platform/github/chain-job.js';
import { runAction } from '../../platform/github/session.js';
import { warnAboutGitHubGate } from '../../platform/github/setup.js';

await runAction(
  'plan',
  async (session) => {
    const s = session.settings;
    const result = await runChainJob(session, s, {
      // The apply job's gate: an environment, named in the status while the plan awaits approval.
      settings: {
        scope: 'plan',
        start: startSettings(s, true),
        approval: { mode: 'environment' },
        preview: s['plan-only'],
      },
      status: { approvalMode: 'environment', approveWorkflow: s['approve-workflow'] },
    });
    if (result.code !== 0) return;
    // A recorded plan awaits a gate: say when the protections that make it meaningful are off (not for previews).
    if (!result.preview)
      await warnAboutGitHubGate(
        { ...session, log: session.platform.log, now: session.now() },
        { ledgerBranch: s['ledger-branch'], ledgerRepository: s['ledger-repository'], environment: s.environment },
      );
    session.platform.setOutput(
      'plan-summary',
      result.preview?.planSummary ?? result.outcome?.workflow.approval.planSummary ?? '',
    );
    if (result.preview) session.platform.setOutput('state', 'planned');
  },
  { artifacts: actionsArtifacts },
);
