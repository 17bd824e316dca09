import { Option, type Command } from 'commander';
import { UsageError } from '../../domain/errors.js';
import { knownHostsName } from '../../domain/inventory.js';
import { parseInventoryRef } from '../../domain/names.js';
import { publicKeyOf } from '../../adapters/ssh-keys.js';
import { loadStandingInventory } from '../../app/inventories.js';
import { pinHostKeys } from '../../app/pins.js';
import { readKnownHostsText, readPins } from '../../ledger/records.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';

/** `address`, `address:port` or `[address]:port`. */
function parseHostArgument(raw: string): { address: string; port: number } {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(raw);
  const plain = /^([^:\s[\]]+)(?::(\d+))?$/.exec(raw);
  const address = bracketed?.[1] ?? plain?.[1];
  const port = Number(bracketed?.[2] ?? plain?.[2] ?? 22);
  if (!address || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(`cannot read host ${JSON.stringify(raw)}`, 'give address, address:port, [address]:port, or a host name with --inventory tf:<name>');
  }
  return { address, port };
}

export function registerHost(program: Command, io: Io): void {
  const host = program.command('host').description('the pinned known_hosts store');

  addLedgerOptions(
    host
      .command('onboard')
      .description('pin a host key in the ledger (trust on first use); --rotate replaces a changed key you confirmed out of band')
      .argument('<host>', 'address, address:port, [address]:port, or a host name of --inventory')
      .addOption(new Option('--rotate', 'accept a changed key for this host').default(false))
      .addOption(new Option('--inventory <ref>', 'resolve <host> as a host name of this standing inventory (tf:<name>)'))
      .addOption(new Option('--fleet-key <file>', 'also print the fleet public key as the JSON extra-vars the onboarding play takes')),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    let target: { name: string; address: string; port: number };
    if (typeof options.inventory === 'string') {
      const ref = parseInventoryRef(options.inventory);
      if (ref.kind !== 'standing') throw new UsageError('--inventory takes tf:<name>');
      const found = loadStandingInventory(await context.store.read(), ref.name).hosts.find((h) => h.name === raw && !h.local);
      if (!found) throw new UsageError(`tf:${ref.name} names no SSH host ${raw}`);
      target = found;
    } else {
      target = { name: raw, ...parseHostArgument(raw) };
    }
    const outcome = await pinHostKeys(context, [target], options.rotate === true ? [target.name] : []);
    const name = knownHostsName(target.address, target.port);
    const state = outcome.added.includes(name) ? 'pinned' : outcome.rotated.includes(name) ? 'rotated' : 'unchanged';
    const extraVars = typeof options.fleetKey === 'string' ? { exocomp_fleet_pubkey: await publicKeyOf(options.fleetKey) } : undefined;
    if (settings.json) io.out(JSON.stringify({ host: name, state, ...(extraVars ? { extraVars } : {}) }));
    else {
      io.out(`${name}: ${state}`);
      if (extraVars) io.out(`extra-vars (pass as -e @file.json; never as k=v):\n${JSON.stringify(extraVars)}`);
    }
  });

  addLedgerOptions(host.command('known-hosts').description('print the pinned known_hosts store (unhashed, usable as UserKnownHostsFile)')).action(
    async (options: Record<string, unknown>) => {
      const settings = globalSettings(options);
      const context = await buildContext(settings, io);
      const snapshot = await context.store.read();
      if (settings.json) io.out(JSON.stringify({ pins: readPins(snapshot) }));
      else io.out(readKnownHostsText(snapshot).trimEnd() || '# no host key pinned yet');
    },
  );
}
