import type { Command } from 'commander';
import { z } from 'zod';
import { renderConvergeRunText } from '../../domain/converge-record.js';
import { describeMissedTicks } from '../../domain/schedule-fires.js';
import { converge, foldJob } from '../../app/converge/converge.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';
import { addScheduleOptions, scheduleTickOf } from '../run-options.js';

const foldOptions = z.object({
  runId: z.string(),
  shards: z.string(),
  scheduleName: z.string().optional(),
  scheduleCron: z.string().optional(),
});

export function registerConverge(program: Command, io: Io): void {
  const group = program.command('converge').description('converges split across runners');
  addLedgerOptions(
    addScheduleOptions(group.command('fold'))
      .description(
        'fold the shard results of one converge run (playbook run --shard i/N --run-id ID) into one record; exits 1 when a host failed or a shard never reported',
      )
      .argument('<ref>', 'tf:<name>')
      .requiredOption('--run-id <id>', 'the id the shards of the run shared')
      .requiredOption('--shards <N>', 'how many shards the run had'),
  ).action(async (ref: string, raw: Record<string, unknown>) => {
    const settings = globalSettings(raw);
    const options = parseOptions(foldOptions, raw);
    const job = foldJob({
      target: ref,
      foldShards: options.shards,
      runId: options.runId,
      schedule: scheduleTickOf(options),
      names: { target: '<ref>', shard: '--shard', foldShards: '--shards', runId: '--run-id' },
    });
    const context = await buildContext(settings, io);
    const result = await converge(context, job);
    const missed = result.ticks && describeMissedTicks(result.ticks.schedule, result.ticks.missed);
    if (settings.json)
      io.out(
        JSON.stringify({ result: { ...result.run, ...(result.ticks ? { missedTicks: result.ticks.missed } : {}) } }),
      );
    else io.out([renderConvergeRunText(result.name, result.run), ...(missed ? [missed] : [])].join('\n'));
    if (!result.run.ok) process.exitCode = 1;
  });
}
