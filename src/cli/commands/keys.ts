import { Option, type Command } from 'commander';
import { z } from 'zod';
import { initKeys } from '../../app/keys/keys.js';
import { revokeCertificate } from '../../app/keys/user-ca.js';
import { keyStoreCommands } from '../../domain/key-variables.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

const initOptions = z.object({ dir: z.string(), force: z.boolean(), json: z.boolean(), userCa: z.boolean() });

export function registerKeys(program: Command, io: Io): void {
  const keys = program.command('keys').description('make the keys a deployment needs (docs/keys.md)');
  keys
    .command('init')
    .description(
      'write the fleet key, the bootstrap key (0600, public halves beside) and a seal key, and print the CI secrets to store them in',
    )
    .addOption(new Option('--dir <dir>', 'directory to write them to').default('keys'))
    .addOption(new Option('--force', 'replace keys that already exist there').default(false))
    .addOption(
      new Option(
        '--user-ca',
        'write only a user CA key (user_ca_ed25519): runs sign a short-lived fleet certificate with it (docs/keys.md)',
      ).default(false),
    )
    .addOption(new Option('--json', 'machine-readable output').default(false))
    .action(async (raw: Record<string, unknown>) => {
      const options = parseOptions(initOptions, raw);
      const made = await initKeys(options.dir, process.cwd(), { force: options.force, userCa: options.userCa });
      if (options.json) {
        io.out(JSON.stringify({ result: { keys: made } }));
        return;
      }
      if (options.userCa) {
        const ca = made[0]!;
        io.out(`wrote ${ca.path} and ${ca.publicPath} (0600) — ${ca.purpose}`);
        const store = keyStoreCommands([ca]);
        io.out('\nstore the private file as a GitHub secret:');
        for (const line of store.github) io.out(`  ${line}`);
        io.out('\nor as a protected GitLab File variable (GitLab cannot mask a multi-line value):');
        for (const line of store.gitlab) io.out(`  ${line}`);
        io.out('\nthen lock the local copy away.');
        io.out(`\nlocally, pass it as: ${ca.option} ${ca.path} --fleet-auth both (then cert once every host has it)`);
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
  addLedgerOptions(
    keys
      .command('revoke <serial-or-key-id>')
      .description(
        "revoke a run's fleet certificate by serial or key id (the workflow id): hosts refuse it once onboarding installs the new KRL (docs/keys.md)",
      ),
  ).action(async (target: string, options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const result = await revokeCertificate(await buildContext(settings, io), target, new Date());
    if (settings.json) {
      io.out(JSON.stringify({ result }));
      return;
    }
    const what =
      'serial' in result.revocation ? `serial ${result.revocation.serial}` : `key id ${result.revocation.keyId}`;
    io.out(
      `${result.added ? 'revoked' : 'already revoked:'} ${what} (${result.matched.length} recorded certificate(s) match); hosts refuse it once onboarded again (the next exocomp provision run with the user CA)`,
    );
  });
}
