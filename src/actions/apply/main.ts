/**
 * Step 1b: the approval gate, then the apply of the approved plan — the sealed
 * saved plan from the plan job (of this run, or of the run a dispatched
 * continuation follows) when a seal key lets it travel, else a re-plan that
 * must match the approved fingerprint.
 */
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import { applyAttestation } from '../../platform/github/attest.js';
import { runChainJob } from '../../platform/github/chain-job.js';
import { runAction } from '../../platform/github/session.js';

await runAction(
  'apply',
  async (session) => {
    const s = session.settings;
    const mode = s['approval-mode'];
    await runChainJob(session, s, {
      settings: { scope: 'apply', approval: { mode, environment: s.environment, selfApproval: s['self-review'] } },
      status: { approvalMode: mode },
      toolCache: true,
      ...applyAttestation(session, async () => (await import('./attest.js')).attest),
    });
  },
  { artifacts: actionsArtifacts },
);
