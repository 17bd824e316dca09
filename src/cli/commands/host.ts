import { Option, type Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { pinnedHosts } from '../../app/hosts/pins.js';
import { onboardHost, type HostToPin } from '../../app/hosts/host-onboard.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

/** `address`, `address:port` or `[address]:port`. */
function parseHostArgument(raw: string): { address: string; port: number } {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(raw);
  const plain = /^([^:\s[\]]+)(?::(\d+))?$/.exec(raw);
  const address = bracketed?.[1] ?? plain?.[1];
  const port = Number(bracketed?.[2] ?? plain?.[2] ?? 22);
  if (!address || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(
      `cannot read host ${JSON.stringify(raw)}`,
      'give address, address:port, [address]:port, or a host name with --inventory tf:<name>',
    );
  }
  return { address, port };
}

const onboardOptions = z.object({
  rotate: z.boolean(),
  inventory: z
    .string()
    .transform((raw) => {
      const ref = parseInventoryRef(raw);
      if (ref.kind !== 'standing') throw new UsageError('--inventory takes tf:<name>');
      return ref.name;
    })
    .optional(),
  fleetKey: z.string().optional(),
  key: z.string().optional(),
});

export function registerHost(program: Command, io: Io): void {
  const host = program.command('host').description('the pinned known_hosts store');

  addLedgerOptions(
    host
      .command('onboard')
      .description(
        'pin a host key in the ledger (trust on first use); --rotate replaces a changed key you confirmed out of band',
      )
      .argument('<host>', 'address, address:port, [address]:port, or a host name of --inventory')
      .addOption(new Option('--rotate', 'accept a changed key for this host').default(false))
      .addOption(
        new Option('--inventory <ref>', 'resolve <host> as a host name of this standing inventory (tf:<name>)'),
      )
      .addOption(
        new Option(
          '--fleet-key <file>',
          'also print the fleet public key as the JSON extra-vars the onboarding play takes',
        ),
      )
      .addOption(
        new Option(
          '--key <file>',
          'for a host of --inventory behind a bastion: a private key the bastion accepts (the scan goes through it)',
        ),
      ),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const o = parseOptions(onboardOptions, options);
    const target: HostToPin =
      o.inventory !== undefined
        ? { kind: 'inventory', inventory: o.inventory, host: raw }
        : { kind: 'address', name: raw, ...parseHostArgument(raw) };
    const context = await buildContext(settings, io);
    const {
      host: name,
      state,
      extraVars,
    } = await onboardHost(context, {
      host: target,
      rotate: o.rotate,
      fleetKeyFile: o.fleetKey,
      bastionKeyFile: o.key,
    });
    if (settings.json) io.out(JSON.stringify({ host: name, state, ...(extraVars ? { extraVars } : {}) }));
    else {
      io.out(`${name}: ${state}`);
      if (extraVars) io.out(`extra-vars (pass as -e @file.json; never as k=v):\n${JSON.stringify(extraVars)}`);
    }
  });

  addLedgerOptions(
    host
      .command('known-hosts')
      .description('print the pinned known_hosts store (unhashed, usable as UserKnownHostsFile)'),
  ).action(async (options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const { pins, knownHosts } = await pinnedHosts(await buildContext(settings, io));
    if (settings.json) io.out(JSON.stringify({ pins }));
    else io.out(knownHosts.trimEnd() || '# no host key pinned yet');
  });
}
