/**
 * The `exocomp` CLI program. Commands only parse their inputs, call one use case and
 * render its result; exit codes: 0 success (or awaiting approval), 1 the work
 * failed, 2 bad usage.
 */
import { Command, CommanderError } from 'commander';
import { describeError, ExocompError } from '../domain/errors.js';
import { processIo, redactingIo, type Io } from './common.js';
import { registerApproval } from './commands/approval.js';
import { registerConverge } from './commands/converge.js';
import { registerDoctor } from './commands/doctor.js';
import { registerDrift } from './commands/drift.js';
import { registerGitLab } from './commands/gitlab.js';
import { registerHost } from './commands/host.js';
import { registerInventory } from './commands/inventory.js';
import { registerKeys } from './commands/keys.js';
import { registerLedger } from './commands/ledger.js';
import { registerPlaybook } from './commands/playbook.js';
import { registerProvenance } from './commands/provenance.js';
import { registerProvision } from './commands/provision.js';
import { registerSchedule } from './commands/schedule.js';
import { registerWorkspace } from './commands/workspace.js';

export function buildProgram(io: Io): Command {
  const program = new Command('exocomp')
    .description(
      'apply an OpenTofu/Terraform workspace, wait for its hosts, onboard them with pinned host keys, and converge them',
    )
    .version('0.1.0')
    .showHelpAfterError('(run the command with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });
  registerProvision(program, io);
  registerApproval(program, io);
  registerProvenance(program, io);
  registerWorkspace(program, io);
  registerPlaybook(program, io);
  registerInventory(program, io);
  registerHost(program, io);
  registerKeys(program, io);
  registerSchedule(program, io);
  registerDrift(program, io);
  registerGitLab(program, io);
  registerConverge(program, io);
  registerLedger(program, io);
  registerDoctor(program, io);
  // Every subcommand inherits the error handling of the root.
  const harden = (command: Command) => {
    command.exitOverride().showHelpAfterError('(run the command with --help for usage)');
    command.configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });
    command.commands.forEach(harden);
  };
  program.commands.forEach(harden);
  return program;
}

export async function main(
  argv: string[],
  rawIo: Io = processIo(process.env, { json: argv.includes('--json') }),
): Promise<number> {
  const io = redactingIo(rawIo);
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not errors.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      return 2;
    }
    const json = argv.includes('--json');
    if (json) {
      io.out(
        JSON.stringify({
          error: {
            kind: error instanceof ExocompError ? error.kind : 'internal',
            message: error instanceof Error ? error.message : String(error),
            help: error instanceof ExocompError ? error.help : undefined,
          },
        }),
      );
    } else {
      io.err(`error: ${describeError(error)}`);
    }
    return error instanceof ExocompError ? error.exitCode : 1;
  }
}
