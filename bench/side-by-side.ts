import { join } from 'node:path';
/** Rounds of exocomp beside a baseline, alternating which goes first, and the medians of each. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * `--only <kind>` on the command line runs that side alone, so each side can be timed as a whole process
 * (paired by an outside timer); the result then holds that side only.
 */
export async function sideBySide<K extends string>(kinds: readonly [K, K], rounds: number, round: (kind: K) => Promise<number>): Promise<Partial<Record<K, number>>> {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  if (only !== undefined && !kinds.includes(only as K)) throw new Error(`--only takes ${kinds.join(' or ')}, not ${only}`);
  const run = kinds.filter((k) => only === undefined || k === only);
  const times = Object.fromEntries(run.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < rounds; i++) {
    // Alternate the order so neither side always runs on a warmer machine.
    for (const kind of i % 2 === 0 ? run : [...run].reverse()) {
      const ms = await round(kind);
      times[kind].push(ms);
      console.log(`round ${i + 1} ${kind.padEnd(8)} ${(ms / 1000).toFixed(2)} s`);
    }
  }
  return Object.fromEntries(run.map((k) => [k, median(times[k])])) as Partial<Record<K, number>>;
}

/** The `exocomp provision run` both benchmarks time: the workspace's own site.yml, its ledger, the stand-in and the two keys. */
export function provisionRunArgs(cli: string, ws: string, tofu: string, fleetKey: string, bootstrapKey: string, ...extra: string[]): string[] {
  return [
    cli,
    'provision',
    'run',
    ws,
    join(ws, 'site.yml'),
    ...extra,
    '--workspace-name',
    'bench',
    '--ledger',
    join(ws, 'ledger.git'),
    '--tofu-binary',
    tofu,
    '--fleet-key',
    fleetKey,
    '--bootstrap-key',
    bootstrapKey,
  ];
}
