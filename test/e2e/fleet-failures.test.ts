/**
 * Failures at fleet size (issue 29): a step failing on 300 hosts prints one
 * summary line with the count and at most ten names, while the JSON events and
 * `provision status --json` hold every host. Nothing listens on the hosts'
 * port, so the SSH wait fails for all of them; Node warns of nothing on stderr.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, workflowIdFrom, type ChainFixture, type CliResult } from '../support/chain-fixture.js';
import { canListen, randomLoopbackAddress } from '../support/addresses.js';

const HOST_COUNT = 300;
/** Discard: nothing on a test machine listens there, so every probe is refused at once. */
const SILENT_PORT = 9;

function output(result: CliResult): string {
  return `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
}

async function silentAddresses(count: number): Promise<string[]> {
  const addresses = new Set<string>();
  while (addresses.size < count) {
    const address = randomLoopbackAddress();
    if (await canListen(address, SILENT_PORT)) addresses.add(address);
  }
  return [...addresses];
}

describe(`a step failing on ${HOST_COUNT} hosts`, () => {
  let fx: ChainFixture;
  let names: string[];
  let run: CliResult;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname, join(fx.dir, 'site.yml'));
    const addresses = await silentAddresses(HOST_COUNT);
    names = addresses.map((_, i) => `node${String(i + 1).padStart(3, '0')}`);
    const hosts = Object.fromEntries(
      names.map((name, i) => [name, { ansible_host: addresses[i], ansible_port: SILENT_PORT, ansible_user: 'root' }]),
    );
    await fx.setInventory({ all: { hosts } });
    run = await fx.cli(
      ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name', 'edge'].concat([
        '--ssh-wait',
        '2s',
        '--json',
      ]),
    );
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('reports one line with the count and at most ten names', () => {
    expect(run.code, output(run)).toBe(1);
    const failed = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event: string; summary?: string; hosts?: string[] })
      .find((event) => event.event === 'step-failed');
    expect(failed?.summary).toMatch(new RegExp(`^no SSH banner within 2.0s from ${HOST_COUNT} host\\(s\\): `));
    expect(failed?.summary).not.toContain('\n');
    expect(failed?.summary?.match(/\bnode\d{3}\b/g)?.length).toBeLessThanOrEqual(11); // ten names and the first's line
    expect(failed?.summary).toContain(`and ${HOST_COUNT - 10} more`);
    expect(failed?.hosts?.slice().sort()).toEqual(names);
  });

  it('keeps every host in status --json', async () => {
    const status = await fx.cli(['provision', 'status', workflowIdFrom(run), ...fx.ledgerArgs, '--json']);
    expect(status.code, output(status)).toBe(0);
    const view = JSON.parse(status.stdout) as { failure: { step: string; hosts: string[]; detail: string } };
    expect(view.failure.step).toBe('ssh-wait');
    expect(view.failure.hosts.slice().sort()).toEqual(names);
    expect(view.failure.detail.split('\n')).toHaveLength(HOST_COUNT);
  });

  it('prints nothing on stderr but its own lines', () => {
    expect(run.stderr).not.toMatch(/Warning|\(node:\d+\)/);
  });
});
