/** The root action: the whole chain in one job — find or create the workflow, pass its approval gate, run the chain, publish. */
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import { applyAttestation } from '../../platform/github/attest.js';
import { runChainJob, startSettings } from '../../platform/github/chain-job.js';
import { runAction } from '../../platform/github/session.js';

await runAction(
  'provision',
  async (session) => {
    const s = session.settings;
    const mode = s['approval-mode'];
    await runChainJob(session, s, {
      settings: {
        scope: 'chain',
        start: startSettings(s, s['require-approval']),
        approval: { mode, environment: s.environment, selfApproval: s['self-review'] },
      },
      status: { approvalMode: mode, approveWorkflow: s['approve-workflow'] },
      toolCache: true,
      ...applyAttestation(session, async () => (await import('./attest.js')).attest),
    });
  },
  { artifacts: actionsArtifacts },
);
