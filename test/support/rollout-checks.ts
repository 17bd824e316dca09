/**
 * The acceptance of issue 41 over a rollout scenario (rollout-scenario.ts), as
 * one vitest suite: test/e2e/rollout.test.ts runs it at 20 hosts and 2 shards,
 * test/fleet/rollout-fleet.test.ts at 200 hosts and 4.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConvergeRun } from '../../src/domain/converge-record.js';
import { batchEnds, parseRollout } from '../../src/domain/rollout.js';
import type { CliResult } from './chain-fixture.js';
import { createRolloutScenario, FAIL_MARKER, UNHEALTHY_MARKER, type RolloutScenario } from './rollout-scenario.js';

function output(results: CliResult[]): string {
  return results.map((r) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`).join('\n');
}

export function rolloutSuite(count: number, shards: number, timeoutMs: number): void {
  const ROLLOUT = ['--rollout', '1,10%,100%', '--max-failures', '2%'];
  const ends = batchEnds(parseRollout('1,10%,100%'), count);
  // 5 % of the fleet fails, all in batch 2 (after the one canary): more than 2 % there, so the rollout stops there.
  const failing = Array.from({ length: Math.ceil(count * 0.05) }, (_, i) => i + 1);

  describe(`a rollout over ${count} loopback hosts and ${shards} shards`, () => {
    let s: RolloutScenario;
    let before: number[];
    let shardRuns: CliResult[];
    let fold: CliResult;

    const history = async (): Promise<ConvergeRun[]> =>
      (JSON.parse((await s.fx.ledgerFile('converges/fleet/history.json')) ?? '{"runs":[]}') as { runs: ConvergeRun[] })
        .runs;
    const touchedSince = async (baseline: number[]) =>
      (await s.fleetLogins()).flatMap((n, i) => (n > (baseline[i] ?? 0) ? [s.names[i] as string] : []));

    beforeAll(async () => {
      expect(failing.at(-1)).toBeLessThan(ends[1] as number);
      s = await createRolloutScenario(count);
      expect(s.provisioned.code, output([s.provisioned])).toBe(0);
      await Promise.all(failing.map((i) => s.hosts[i]!.exec(`touch ${FAIL_MARKER}`)));
      before = await s.fleetLogins();
      shardRuns = await s.rollOut('r1', shards, ROLLOUT);
      fold = await s.fx.cli([
        ...['converge', 'fold', 'tf:fleet', '--run-id', 'r1', '--shards', String(shards)],
        ...s.fx.ledgerArgs,
      ]);
    }, timeoutMs);

    afterAll(async () => {
      await s?.cleanup();
    }, timeoutMs);

    it('stops in batch 2, touching no host after it; the fold exits non-zero naming the batch and the failed hosts', async () => {
      for (const run of shardRuns) {
        expect(run.code, output(shardRuns)).toBe(1);
        expect(run.stderr).toContain('the rollout stopped in batch 2');
      }
      const touched = await touchedSince(before);
      expect(touched).toEqual(s.names.slice(0, ends[1]));
      expect(fold.code, output([fold])).toBe(1);
      const failedNames = failing.map((i) => s.names[i]!);
      expect(fold.stdout).toContain(`batch 2 of 3: stopped, ${failing.length} failed host(s)`);
      for (const name of failedNames)
        expect(fold.stdout).toMatch(new RegExp(`^  ${name} \\(shard \\d+/${shards}\\): failed$`, 'm'));
      const [run] = await history();
      expect(run?.rollout).toMatchObject({ batchReached: 2, stopped: true, untouched: s.names.slice(ends[1]) });
      expect(run?.rollout?.failed.map((f) => f.host).sort()).toEqual(failedNames);
    });

    it('--failed-only --from-run replays exactly the failed and unreached hosts, in a run linked to the one it repairs', async () => {
      await Promise.all(failing.map((i) => s.hosts[i]!.exec(`rm ${FAIL_MARKER}`)));
      const baseline = await s.fleetLogins();
      const rerun = await s.rollOut('r2', 1, ['--failed-only', '--from-run', 'r1']);
      expect(rerun[0]?.code, output(rerun)).toBe(0);
      expect(await touchedSince(baseline)).toEqual(s.names.filter((_, i) => failing.includes(i) || i >= ends[1]!));
      const runs = await history();
      expect(runs.find((r) => r.runId === 'r2')).toMatchObject({ ok: true, repairs: 'r1' });
    });

    it('a health check that fails on one host of batch 2 stops the rollout there', async () => {
      const sick = failing[0]!;
      await s.hosts[sick]!.exec(`touch ${UNHEALTHY_MARKER}`);
      const baseline = await s.fleetLogins();
      // No failure allowed, at any fleet size: the one unhealthy host spends the budget.
      const runs = await s.rollOut('r3', shards, [
        '--rollout',
        '1,10%,100%',
        '--max-failures',
        '0',
        '--health-check',
        'health.yml',
      ]);
      for (const run of runs) expect(run.stderr, output(runs)).toContain('the rollout stopped in batch 2');
      expect(await touchedSince(baseline)).toEqual(s.names.slice(0, ends[1]));
      const folded = await s.fx.cli([
        ...['converge', 'fold', 'tf:fleet', '--run-id', 'r3', '--shards', String(shards), '--json'],
        ...s.fx.ledgerArgs,
      ]);
      expect(folded.code).toBe(1);
      const result = (JSON.parse(folded.stdout) as { result: ConvergeRun }).result;
      expect(result.rollout?.failed).toEqual([{ host: s.names[sick], reason: 'health-check' }]);
      expect(result.hosts.find((h) => h.host === s.names[sick])).toMatchObject({ ok: false, reason: 'health-check' });
    });
  });
}
