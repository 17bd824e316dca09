/**
 * Issue 12 item 4, missed schedule ticks through the real CLI: a schedule whose
 * recorded fires (written to the ledger as earlier runs would have) skip one
 * tick; a scheduled converge records its own fire and its summary names the
 * tick that never ran; `provision status` (text and --json) shows it too.
 * Real git ledger, real ansible against a host the play reaches locally.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cronFireTimes } from '../../src/domain/cron.js';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import { commitToLedger } from '../support/ledger-git.js';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';

const CRON = '17 * * * *';
const HOUR = 3_600_000;

describe('missed schedule ticks', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await fx.setInventory({
      all: { hosts: { runner1: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } },
    });
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, '--workspace-name', 'edge', ...fx.common]);
    expect(apply.code, apply.stderr).toBe(0);
    await writeFile(
      join(fx.dir, 'site.yml'),
      ['- name: Converge', '  hosts: all', '  gather_facts: false', '  tasks:', '    - ansible.builtin.ping:', ''].join(
        '\n',
      ),
    );
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('a scheduled converge records its fire and names the tick that never ran; status shows it', async () => {
    // Six hours of hourly ticks up to now, each answered on time, except the third: that run was dropped.
    const now = Date.now();
    const ticks = cronFireTimes(CRON, new Date(now - 6 * HOUR), new Date(now));
    const dropped = ticks[2] as Date;
    const fires = ticks.filter((t) => t !== dropped).map((t) => t.toISOString());
    await commitToLedger(
      fx.ledger,
      {
        [LEDGER_PATHS.scheduleFires('nightly')]:
          `${JSON.stringify({ schemaVersion: 1, name: 'nightly', cron: CRON, fires }, null, 2)}\n`,
      },
      'earlier runs of schedule nightly',
    );

    const converge = await fx.cli([
      'playbook',
      'run',
      'site.yml',
      '--inventory',
      'tf:edge',
      ...fx.ledgerArgs,
      '--schedule-name',
      'nightly',
      '--schedule-cron',
      CRON,
    ]);
    expect(converge.code, `${converge.stdout}\n${converge.stderr}`).toBe(0);
    const line = `schedule nightly ('${CRON}' UTC): 1 tick(s) never ran: ${dropped.toISOString()}`;
    expect(`${converge.stdout}\n${converge.stderr}`).toContain(line);
    const recorded = JSON.parse((await fx.ledgerFile(LEDGER_PATHS.scheduleFires('nightly'))) ?? '{}') as {
      fires: string[];
    };
    expect(recorded.fires).toHaveLength(fires.length + 1);

    const status = await fx.cli(['provision', 'status', ...fx.ledgerArgs]);
    expect(status.stdout).toContain(line);
    const json = await fx.cli(['provision', 'status', ...fx.ledgerArgs, '--json']);
    const parsed = JSON.parse(json.stdout) as {
      schedules: Array<{ name: string; fires: number; missedTicks: string[] }>;
    };
    expect(parsed.schedules).toEqual([
      { name: 'nightly', cron: CRON, fires: fires.length + 1, missedTicks: [dropped.toISOString()] },
    ]);
  });
});
