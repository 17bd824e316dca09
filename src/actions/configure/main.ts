/** One step of the chain as its own job: runs only configure, after the step before it succeeded. */
import { chainFailure, runChainHere } from '../../platform/github/chain-actions.js';
import { githubRunInputs, openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';

await runAction('configure', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { write: true });
  const inputs = await githubRunInputs(session, s);
  const result = await runChainHere(session, app, s['workflow-id'], inputs, { only: 'configure' });
  await publishWorkflow(session, app, result.workflow, { comment: s.comment, commentAuthor: s['comment-author'] });
  const failure = chainFailure(result);
  if (failure) throw failure;
});
