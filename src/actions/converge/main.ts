/**
 * A play against a standing inventory (the scheduled converge): fails closed
 * when tf:<name> is unusable; sealed outputs reach the play only because the
 * target names it. With `shard: i/N` it converges that shard and records its
 * result; with `fold-shards: N` (a matrix's final job) it folds the shards into
 * one converge record and summary; with `concurrency-key` it holds that ledger
 * lease; with `schedule-name` it records the schedule's fire (missed ticks).
 */
import { converge, convergeJob } from '../../app/converge/converge.js';
import { playInputs } from '../../app/plays/run-inputs.js';
import { publishConverge } from '../../platform/github/converge-report.js';
import { scheduleTick } from '../../platform/github/run-context.js';
import { githubRunInputs, openLedger, playReporting, runAction } from '../../platform/github/session.js';

await runAction('converge', async (session) => {
  const s = session.settings;
  const job = convergeJob({
    target: s.target,
    shard: s.shard,
    foldShards: s['fold-shards'],
    // Shards of one run share the run id; a re-run attempt of one shard replaces its own result.
    runId: String(session.run.runId),
    concurrencyKey: s['concurrency-key'],
    schedule: scheduleTick(session.run, s['schedule-name']),
    rollout: s.rollout,
    maxFailures: s['max-failures'],
    healthCheck: s['health-check'],
    rolloutWaitMs: s['rollout-wait'],
    failedOnly: s['failed-only'],
    fromRun: s['from-run'],
    names: { target: 'target', shard: 'shard', foldShards: 'fold-shards', runId: 'run id' },
  });
  const app = await openLedger(session, s, { provePushAccess: job.writesLedger });
  const inputs = await githubRunInputs(session, s);
  const result = await converge(app, job, {
    playbook: s.playbook,
    remoteUser: s['remote-user'],
    ...playInputs(inputs),
    ...(s.args.length > 0 ? { passthrough: s.args } : {}),
    concurrencyWaitMs: s['concurrency-wait'],
    ci: session.platform,
    ...playReporting(session),
  });
  await publishConverge(session, job, result);
});
