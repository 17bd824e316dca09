import { Option, type Command } from 'commander';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef, parseUserName } from '../../domain/names.js';
import { checkPlaybookFile } from '../../app/input-checks.js';
import { parseDuration } from '../../domain/duration.js';
import { EGRESS_EXTRA_VAR, parseEgressPorts } from '../../domain/egress.js';
import { parseConcurrencyKey } from '../../domain/lock.js';
import { withConcurrencyLock } from '../../app/concurrency.js';
import { grantIdentityFile } from '../../app/identity.js';
import { keyRefusedHelp, playFailureSummary, type PlayOutcome } from '../../app/play.js';
import { playProgress } from '../../app/progress.js';
import { convergeShard } from '../../app/converge-shards.js';
import { parseShardSpec, shardLease } from '../../domain/shard.js';
import { checkRecordName } from '../../ledger/records.js';
import { runFilePlay, runStandingPlay } from '../../app/standing-play.js';
import { vendorCollections } from '../../app/vendor.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';
import { addKeyOptions, addPlayOptions, runInputs } from '../run-options.js';

export function registerPlaybook(program: Command, io: Io): void {
  const playbook = program.command('playbook').description('run plays against standing inventories; vendor collections');

  addLedgerOptions(
    addPlayOptions(
      addKeyOptions(
        playbook
          .command('run')
          .description('run a playbook against tf:<name> (fails closed) or an inventory file; arguments after -- go to ansible-playbook')
          .argument('<playbook>', 'the playbook')
          .argument('[passthrough...]', 'extra ansible-playbook arguments (after --)')
          .requiredOption('--inventory <ref>', 'tf:<name> or an inventory file')
          .addOption(new Option('--remote-user <name>', 'user the play connects as').default('exocomp'))
          .addOption(new Option('--ssh-identity <file>', 'a key file granted to this run as its identity (a 0600 copy)'))
          .addOption(new Option('--concurrency-key <key>', 'hold this lease in the ledger while the play runs: runs sharing a key never overlap'))
          .addOption(new Option('--concurrency-wait <duration>', 'how long to wait for the holder of --concurrency-key before refusing').default('10m'))
          .addOption(new Option('--shard <i/N>', 'converge only shard i of N of tf:<name> (GitLab: "$CI_NODE_INDEX/$CI_NODE_TOTAL"); records the shard for `converge fold`'))
          .addOption(new Option('--run-id <id>', 'with --shard: the id the shards of one converge share (GitHub run id, GitLab pipeline id)'))
          .addOption(
            new Option('--egress <port>', 'a port the play needs besides 22 (repeatable); declared and passed as exocomp_egress_ports, not enforced')
              .argParser((value: string, previous: string[]) => [...previous, value])
              .default([]),
          ),
      ),
    ),
  ).action(async (book: string, passthrough: string[], options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const ref = parseInventoryRef(String(options.inventory));
    parseUserName(String(options.remoteUser), '--remote-user');
    checkPlaybookFile(book, 'playbook');
    const shard = typeof options.shard === 'string' ? parseShardSpec(options.shard) : undefined;
    if (shard !== undefined && ref.kind !== 'standing') throw new UsageError('--shard splits a standing inventory', 'pass --inventory tf:<name>');
    if (shard !== undefined && typeof options.runId !== 'string')
      throw new UsageError('--shard needs --run-id', 'pass the id the shards of this converge share, e.g. --run-id "$CI_PIPELINE_ID"');
    const runId = typeof options.runId === 'string' ? checkRecordName('converge run', options.runId) : undefined;
    const concurrencyKey =
      typeof options.concurrencyKey === 'string'
        ? shard
          ? shardLease(parseConcurrencyKey(options.concurrencyKey), shard).ledgerKey
          : parseConcurrencyKey(options.concurrencyKey)
        : undefined;
    const concurrencyWaitMs = parseDuration(String(options.concurrencyWait));
    const egressPorts = parseEgressPorts(options.egress as string[]);
    const context = await buildContext(settings, io);
    const inputs = runInputs(options, context.env, [], io.secrets);
    const identity = typeof options.sshIdentity === 'string' ? await grantIdentityFile(options.sshIdentity, context.cwd) : undefined;
    inputs.secrets.add(identity?.contents);
    const info = (message: string) => context.progress.emit({ type: 'info', message: inputs.secrets.redact(message) });
    const common = {
      playbook: book,
      remoteUser: String(options.remoteUser),
      ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
      ...(identity ? { identityFile: identity.path } : {}),
      extraVars: { [EGRESS_EXTRA_VAR]: egressPorts },
      runSecrets: inputs.runSecrets,
      check: options.check === true,
      ...(typeof options.limit === 'string' ? { limit: options.limit } : {}),
      ...(typeof options.tags === 'string' ? { tags: options.tags } : {}),
      ...(passthrough.length > 0 ? { passthrough } : {}),
      secrets: inputs.secrets,
      info,
      // A person reads ansible's own output; a program reads the same events the chain reports.
      onOutput: settings.json ? undefined : (line: string) => io.err(line.trimEnd()),
      onEvent: settings.json ? playProgress(context.progress) : undefined,
    };
    if (egressPorts.length > 1) info(`declared egress ports ${egressPorts.join(', ')} (passed to the play as ${EGRESS_EXTRA_VAR}; nothing here enforces them)`);
    const play = async (): Promise<{ outcome: PlayOutcome }> => {
      if (ref.kind === 'file') return runFilePlay(context, ref, common);
      const standing = { ...common, name: ref.name, ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}) };
      if (shard === undefined || runId === undefined) return runStandingPlay(context, standing);
      const { outcome, result } = await convergeShard(context, { ...standing, shard, runId });
      if (settings.json) io.out(JSON.stringify({ shard: result }));
      return { outcome };
    };
    const { outcome } = concurrencyKey
      ? await withConcurrencyLock(
          context,
          {
            key: concurrencyKey,
            waitMs: concurrencyWaitMs,
            purpose: `playbook run ${book} --inventory ${String(options.inventory)}`,
            info,
            warn: (message: string) => context.progress.emit({ type: 'warning', message: inputs.secrets.redact(message) }),
          },
          play,
        )
      : await play();
    if (settings.json) io.out(JSON.stringify({ result: { code: outcome.code, ok: outcome.code === 0 } }));
    if (outcome.code !== 0) {
      io.err(`error: play failed: ${playFailureSummary(outcome)}`);
      const keyHelp = keyRefusedHelp(outcome, {
        ...(inputs.fleetKeyPath ? { key: `the fleet key ${inputs.fleetKeyPath}` } : identity ? { key: `the identity ${String(options.sshIdentity)}` } : {}),
        user: String(options.remoteUser),
      });
      if (keyHelp) io.err(`  → ${keyHelp}`);
      process.exitCode = 1;
    }
  });

  playbook
    .command('vendor')
    .description('install the collections of a requirements file into .exocomp/collections, which later runs use (no Galaxy at run time)')
    .requiredOption('--requirements <file>', 'an ansible-galaxy requirements.yml')
    .addOption(new Option('--json', 'machine-readable output').default(false))
    .action(async (options: Record<string, unknown>) => {
      if (typeof options.requirements !== 'string') throw new UsageError('--requirements <file> is required');
      const result = await vendorCollections(process.cwd(), options.requirements);
      if (options.json === true) io.out(JSON.stringify({ result }));
      else io.out(`vendored into ${result.path}:\n${result.collections.map((c) => `  ${c}`).join('\n') || '  (nothing)'}`);
    });
}
