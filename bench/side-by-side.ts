import { join } from 'node:path';
/** Rounds of exocomp beside a baseline, alternating which goes first, and the medians of each. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function sideBySide<K extends string>(kinds: readonly [K, K], rounds: number, round: (kind: K) => Promise<number>): Promise<Record<K, number>> {
  const times = Object.fromEntries(kinds.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < rounds; i++) {
    // Alternate the order so neither side always runs on a warmer machine.
    for (const kind of i % 2 === 0 ? kinds : ([kinds[1], kinds[0]] as const)) {
      const ms = await round(kind);
      times[kind].push(ms);
      console.log(`round ${i + 1} ${kind.padEnd(8)} ${(ms / 1000).toFixed(2)} s`);
    }
  }
  return Object.fromEntries(kinds.map((k) => [k, median(times[k])])) as Record<K, number>;
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
