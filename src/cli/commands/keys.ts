import { Option, type Command } from 'commander';
import { z } from 'zod';
import { initKeys } from '../../app/keys/keys.js';
import { keyStoreCommands } from '../../domain/key-variables.js';
import { parseOptions, type Io } from '../common.js';

const initOptions = z.object({ dir: z.string(), force: z.boolean(), json: z.boolean() });

export function registerKeys(program: Command, io: Io): void {
  const keys = program.command('keys').description('make the keys a deployment needs (docs/keys.md)');
  keys
    .command('init')
    .description(
      'write the fleet key, the bootstrap key (0600, public halves beside) and a seal key, and print the CI secrets to store them in',
    )
    .addOption(new Option('--dir <dir>', 'directory to write them to').default('keys'))
    .addOption(new Option('--force', 'replace keys that already exist there').default(false))
    .addOption(new Option('--json', 'machine-readable output').default(false))
    .action(async (raw: Record<string, unknown>) => {
      const options = parseOptions(initOptions, raw);
      const made = await initKeys(options.dir, process.cwd(), { force: options.force });
      if (options.json) {
        io.out(JSON.stringify({ result: { keys: made } }));
        return;
      }
      for (const key of made)
        io.out(`wrote ${key.path}${key.publicPath ? ` and ${key.publicPath}` : ''} (0600) — ${key.purpose}`);
      const store = keyStoreCommands(made);
      io.out('\nstore them as GitHub secrets:');
      for (const line of store.github) io.out(`  ${line}`);
      io.out(
        '\nor as GitLab CI/CD variables (the private keys as protected File variables, which GitLab cannot mask):',
      );
      for (const line of store.gitlab) io.out(`  ${line}`);
      io.out('\nthen delete or lock away the local copies.');
      io.out('\nlocally, pass them as:');
      io.out(
        `  exocomp provision run <workspace> <playbook> --fleet-key ${made[0]!.path} --bootstrap-key ${made[1]!.path} --seal-key "$(cat ${made[2]!.path})"`,
      );
      io.out(
        `\nthe bootstrap public key (${made[1]!.publicPath}) goes into new hosts: the provider's ssh_keys or cloud-init (docs/keys.md)`,
      );
    });
}
