import type { Command } from 'commander';
import { renderConvergeRunText } from '../../domain/converge-record.js';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { parseShardNumber } from '../../domain/shard.js';
import { foldConvergeShards } from '../../app/converge-shards.js';
import { checkRecordName } from '../../ledger/records.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';

export function registerConverge(program: Command, io: Io): void {
  const converge = program.command('converge').description('converges split across runners');
  addLedgerOptions(
    converge
      .command('fold')
      .description('fold the shard results of one converge run (playbook run --shard i/N --run-id ID) into one record; exits 1 when a host failed or a shard never reported')
      .argument('<ref>', 'tf:<name>')
      .requiredOption('--run-id <id>', 'the id the shards of the run shared')
      .requiredOption('--shards <N>', 'how many shards the run had'),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const ref = parseInventoryRef(raw);
    if (ref.kind !== 'standing') throw new UsageError(`${raw} is not a standing inventory`, 'name it as tf:<workspace-name>');
    const runId = checkRecordName('converge run', String(options.runId));
    const shards = parseShardNumber(String(options.shards), '--shards');
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const run = await foldConvergeShards(context, { name: ref.name, runId, shards });
    io.out(settings.json ? JSON.stringify({ result: run }) : renderConvergeRunText(ref.name, run));
    if (!run.ok) process.exitCode = 1;
  });
}
