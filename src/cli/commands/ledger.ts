import type { Command } from 'commander';
import { checkLedger } from '../../app/ledger/check.js';
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
  addLedgerOptions(
    ledger
      .command('check')
      .description(
        'read every record and list each one that cannot be used (corrupt or malformed), with its ref and the fix; exits 1 when any; writes nothing',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const result = await checkLedger(await buildContext(settings, io));
    if (settings.json) io.out(JSON.stringify({ result }));
    else if (result.problems.length === 0) io.out(`${result.ledger}: ${result.files} file(s), every record readable`);
    else {
      io.out(`${result.ledger}: ${result.problems.length} of ${result.files} file(s) cannot be used`);
      for (const problem of result.problems) {
        io.out(`${problem.file}${problem.ref ? ` (${problem.ref})` : ''}: ${problem.damage}: ${problem.reason}`);
        io.out(`  fix: ${problem.fix}`);
      }
    }
    if (result.problems.length > 0) process.exitCode = 1;
  });
}
