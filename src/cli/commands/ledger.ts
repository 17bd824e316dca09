import type { Command } from 'commander';
import { migrateLedger } from '../../app/ledger/migrate.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';

export function registerLedger(program: Command, io: Io): void {
  const ledger = program.command('ledger').description('maintain the ledger itself');
  addLedgerOptions(
    ledger
      .command('migrate')
      .description(
        'move a ledger kept on one branch to one branch per record (<ledger-branch>-records/*), keeping its history; any write does this too',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const result = await migrateLedger(await buildContext(settings, io));
    if (settings.json) io.out(JSON.stringify({ result }));
    else io.out(`${result.ledger}: ${result.files} file(s), one branch per record`);
  });
}
