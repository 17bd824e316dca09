import type { Command } from 'commander';
import { z } from 'zod';
import { renderConvergeRunText } from '../../domain/converge-record.js';
import { converge, foldJob } from '../../app/converge.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

const foldOptions = z.object({ runId: z.string(), shards: z.string() });

export function registerConverge(program: Command, io: Io): void {
  const group = program.command('converge').description('converges split across runners');
  addLedgerOptions(
    group
      .command('fold')
      .description('fold the shard results of one converge run (playbook run --shard i/N --run-id ID) into one record; exits 1 when a host failed or a shard never reported')
      .argument('<ref>', 'tf:<name>')
      .requiredOption('--run-id <id>', 'the id the shards of the run shared')
      .requiredOption('--shards <N>', 'how many shards the run had'),
  ).action(async (ref: string, raw: Record<string, unknown>) => {
    const settings = globalSettings(raw);
    const options = parseOptions(foldOptions, raw);
    const job = foldJob({ target: ref, foldShards: options.shards, runId: options.runId, names: { target: '<ref>', shard: '--shard', foldShards: '--shards', runId: '--run-id' } });
    const context = await buildContext(settings, io);
    const result = await converge(context, job);
    io.out(settings.json ? JSON.stringify({ result: result.run }) : renderConvergeRunText(result.name, result.run));
    if (!result.run.ok) process.exitCode = 1;
  });
}
