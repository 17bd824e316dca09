/**
 * The post step of the actions that run chain steps (`runs.post`,
 * `post-if: always()`; ADR 0008). On "Cancel workflow" the main step records
 * its running step as interrupted within the runner's SIGINT window; when it
 * was killed before it could (the runner's final kill of the process tree, a
 * process lost on the runner), the step stays `running` under this job's
 * lease until the sweeper judges the run over. The post step — run by the
 * runner in the same job after the main step, whatever its outcome — records
 * the step the main step remembered (./running-step.ts) as interrupted,
 * releases the lease and publishes the status.
 *
 * It runs after every job: with no step remembered (the main step recorded
 * every step it started) it returns before reading an input, the ledger or
 * the API, and it never fails a clean job.
 */
import { recordAbandonedStep } from '../../app/provision/interrupted.js';
import { rememberedStep } from './running-step.js';
import { openLedger, publishWorkflow, runAction } from './session.js';

export async function runPostStep(): Promise<void> {
  const running = rememberedStep();
  if (!running) return;
  await runAction(running.action, async (session) => {
    const s = session.settings;
    const app = await openLedger(session, s, { provePushAccess: false });
    const { runId, runAttempt } = session.run;
    const reason = `the action was stopped before it could record the step (run ${runId} attempt ${runAttempt} cancelled, timed out or its process killed); its post step released the lease`;
    const workflow = await recordAbandonedStep(app, running.workflow, running.step, running.holder, reason);
    if (!workflow) {
      session.platform.log.info(
        `${running.workflow}: ${running.step} is no longer held by this job; nothing to record`,
      );
      return;
    }
    session.platform.log.error(
      `${running.step} of ${running.workflow} was left running when the action was stopped: recorded as interrupted, its lease released; ` +
        `a re-run of the job or \`exocomp provision resume ${running.workflow}\` continues from ${running.step}`,
    );
    await publishWorkflow(session, app, workflow, { comment: s.comment });
  });
}
