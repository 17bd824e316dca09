import { Option, type Command } from 'commander';
import { z } from 'zod';
import { gitlabJobLease } from '../../platform/gitlab/platform.js';
import { parseDuration } from '../../domain/duration.js';
import { parseEgressPorts } from '../../domain/egress.js';
import { parseUserName } from '../../domain/names.js';
import { describeMissedTicks } from '../../domain/schedule-fires.js';
import { renderConvergeRunText } from '../../domain/converge-record.js';
import { converge, convergeJob, type ConvergeResult } from '../../app/converge/converge.js';
import { checkPlaybookFile } from '../../app/provision/input-checks.js';
import { keyRefusedHelp, playFailureSummary } from '../../app/plays/play.js';
import { vendorCollections } from '../../app/plays/vendor.js';
import { playInputs } from '../../app/plays/run-inputs.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';
import {
  addKeyOptions,
  addPlayOptions,
  addScheduleOptions,
  playReporting,
  runInputs,
  bastionOption,
  scheduleTickOf,
  gitlabJobOption,
} from '../run-options.js';

const runOptions = z.object({
  inventory: z.string(),
  remoteUser: z.string().transform((name) => parseUserName(name, '--remote-user')),
  sshIdentity: z.string().optional(),
  concurrencyKey: z.string().optional(),
  concurrencyWait: z.string().transform(parseDuration),
  shard: z.string().optional(),
  runId: z.string().optional(),
  rollout: z.string().optional(),
  maxFailures: z.string().optional(),
  healthCheck: z.string().optional(),
  rolloutWait: z.string().transform(parseDuration),
  failedOnly: z.boolean(),
  fromRun: z.string().optional(),
  egress: z.array(z.string()).transform(parseEgressPorts),
  check: z.boolean(),
  limit: z.string().optional(),
  tags: z.string().optional(),
  scheduleName: z.string().optional(),
  scheduleCron: z.string().optional(),
  gitlabJob: z.boolean(),
});

const vendorOptions = z.object({ requirements: z.string(), json: z.boolean() });

/** A play's result: `--json` lines (a shard's recorded result first), or the failure with what to try about a refused key. */
function renderPlay(
  io: Io,
  json: boolean,
  result: ConvergeResult,
  offered: { key: string | undefined; user: string },
): void {
  if (result.kind !== 'played') return;
  const { outcome } = result;
  if (json && result.shard) io.out(JSON.stringify({ shard: result.shard }));
  if (result.folded) {
    if (json) io.out(JSON.stringify({ converge: result.folded }));
    else io.out(renderConvergeRunText(result.shard?.name ?? '', result.folded));
  }
  const missed = result.ticks && describeMissedTicks(result.ticks.schedule, result.ticks.missed);
  if (json)
    io.out(
      JSON.stringify({
        result: {
          code: outcome.code,
          ok: outcome.code === 0,
          ...(result.ticks ? { missedTicks: result.ticks.missed } : {}),
        },
      }),
    );
  else if (missed) io.out(missed);
  const stopped = result.rolloutStopped;
  if (stopped)
    io.err(
      `error: the rollout stopped in batch ${stopped.batch + 1}: ${stopped.failures} failed host(s), more than the ${stopped.allowed} allowed`,
    );
  if (outcome.code === 0 && !stopped && result.folded?.ok !== false) return;
  process.exitCode = 1;
  if (outcome.code === 0) return;
  io.err(`error: play failed: ${playFailureSummary(outcome)}`);
  const keyHelp = keyRefusedHelp(outcome, { ...(offered.key ? { key: offered.key } : {}), user: offered.user });
  if (keyHelp) io.err(`  → ${keyHelp}`);
}

export function registerPlaybook(program: Command, io: Io): void {
  const playbook = program
    .command('playbook')
    .description('run plays against standing inventories; vendor collections');

  addLedgerOptions(
    addPlayOptions(
      addKeyOptions(
        addScheduleOptions(playbook.command('run'))
          .description(
            'run a playbook against tf:<name> (fails closed) or an inventory file; arguments after -- go to ansible-playbook',
          )
          .argument('<playbook>', 'the playbook')
          .argument('[passthrough...]', 'extra ansible-playbook arguments (after --)')
          .requiredOption('--inventory <ref>', 'tf:<name> or an inventory file')
          .addOption(new Option('--remote-user <name>', 'user the play connects as').default('exocomp'))
          .addOption(bastionOption())
          .addOption(gitlabJobOption())
          .addOption(
            new Option('--ssh-identity <file>', 'a key file granted to this run as its identity (a 0600 copy)'),
          )
          .addOption(
            new Option(
              '--concurrency-key <key>',
              'hold this lease in the ledger while the play runs: runs sharing a key never overlap',
            ),
          )
          .addOption(
            new Option(
              '--concurrency-wait <duration>',
              'how long to wait for the holder of --concurrency-key before refusing',
            ).default('10m'),
          )
          .addOption(
            new Option(
              '--shard <i/N>',
              'converge only shard i of N of tf:<name> (GitLab: "$CI_NODE_INDEX/$CI_NODE_TOTAL"); records the shard for `converge fold`',
            ),
          )
          .addOption(
            new Option(
              '--run-id <id>',
              'with --shard: the id the shards of one converge share (GitHub run id, GitLab pipeline id)',
            ),
          )
          .addOption(
            new Option(
              '--rollout <sizes>',
              'converge tf:<name> in cumulative batches, e.g. 1,10%,100%; every shard of the run (--run-id) shares one failure budget',
            ),
          )
          .addOption(
            new Option(
              '--max-failures <N|P%>',
              'with --rollout: the failed (or unreachable) hosts the whole fleet may have before the rollout stops (default 0)',
            ),
          )
          .addOption(
            new Option(
              '--health-check <playbook>',
              'with --rollout: run this playbook against each batch just converged; a host it fails counts against the budget',
            ),
          )
          .addOption(
            new Option(
              '--rollout-wait <duration>',
              'with --rollout: how long a shard waits for the others to finish a batch',
            ).default('30m'),
          )
          .addOption(
            new Option(
              '--failed-only',
              'with --from-run: replay only the hosts that run failed or never reached (read from the ledger); the new run records which run it repairs',
            ).default(false),
          )
          .addOption(new Option('--from-run <id>', 'with --failed-only: the converge run to repair'))
          .addOption(
            new Option(
              '--egress <port>',
              'a port the play needs besides 22 (repeatable); declared and passed as exocomp_egress_ports, not enforced',
            )
              .argParser((value: string, previous: string[]) => [...previous, value])
              .default([]),
          ),
      ),
    ),
  ).action(async (book: string, passthrough: string[], raw: Record<string, unknown>) => {
    const settings = globalSettings(raw);
    const o = parseOptions(runOptions, raw);
    checkPlaybookFile(book, 'playbook');
    const job = convergeJob({
      target: o.inventory,
      shard: o.shard,
      runId: o.runId,
      concurrencyKey: o.concurrencyKey,
      schedule: scheduleTickOf(o),
      rollout: o.rollout,
      maxFailures: o.maxFailures,
      healthCheck: o.healthCheck,
      rolloutWaitMs: o.rolloutWait,
      failedOnly: o.failedOnly,
      fromRun: o.fromRun,
      allowFile: true,
      names: { target: '--inventory', shard: '--shard', foldShards: '--shards', runId: '--run-id' },
    });
    const context = await buildContext(settings, io);
    const inputs = await runInputs(raw, context.env, [], io, o.gitlabJob);
    const result = await converge(context, job, {
      ...(o.gitlabJob ? { ci: gitlabJobLease(process.env, inputs.secrets) } : {}),
      playbook: book,
      remoteUser: o.remoteUser,
      ...playInputs(inputs),
      sshIdentity: o.sshIdentity,
      egressPorts: o.egress,
      check: o.check,
      limit: o.limit,
      tags: o.tags,
      ...(passthrough.length > 0 ? { passthrough } : {}),
      concurrencyWaitMs: o.concurrencyWait,
      purpose: `playbook run ${book} --inventory ${o.inventory}`,
      ...playReporting(context, inputs.secrets, settings.json, io, o.gitlabJob),
    });
    renderPlay(io, settings.json, result, {
      key: inputs.fleetKeyPath
        ? `the fleet key ${inputs.fleetKeyPath}`
        : o.sshIdentity && `the identity ${o.sshIdentity}`,
      user: o.remoteUser,
    });
  });

  playbook
    .command('vendor')
    .description(
      'install the collections of a requirements file into .exocomp/collections, which later runs use (no Galaxy at run time)',
    )
    .requiredOption('--requirements <file>', 'an ansible-galaxy requirements.yml')
    .addOption(new Option('--json', 'machine-readable output').default(false))
    .action(async (raw: Record<string, unknown>) => {
      const options = parseOptions(vendorOptions, raw);
      const result = await vendorCollections(process.cwd(), options.requirements);
      if (options.json) io.out(JSON.stringify({ result }));
      else
        io.out(`vendored into ${result.path}:\n${result.collections.map((c) => `  ${c}`).join('\n') || '  (nothing)'}`);
    });
}
