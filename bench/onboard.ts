/**
 * npm run bench:onboard — the onboarding step of `exocomp provision run`
 * (key pinning, the fleet key, the run boundary, the seeded play) against the
 * bare tools doing the same on the same kind of host: `ssh-keyscan` and
 * `ansible-playbook playbooks/onboard.yml` with the bootstrap key. Each round
 * uses fresh disposable hosts; the order alternates. Prints medians and the
 * ratio (target ≤ 1.10). The exocomp figure runs from apply's capture to
 * onboarding's success (`--json` events, as they arrive): the wait for the
 * banner and the host-key scan start there (ADR 0018), so it includes apply's
 * success write and the hand-over's, beside which they run, and the banner
 * probe of a host that is already up, as the bare side's keyscan is its wait.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { createLoopbackHost, generateKeyPair } from '../test/support/loopback-host.js';
import { standinPath } from '../test/support/tofu-standin.js';
import { sideBySide, provisionRunArgs, ratioLine, fillBenchWorkspace, cliEnv, ansiblePython } from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const python = await ansiblePython();

const bareOnboard = `#!/bin/bash
set -euo pipefail
cd "$WS"
ssh-keyscan -T 5 -p "$PORT" "$ADDR" > known_hosts 2>/dev/null
export ANSIBLE_PIPELINING=True ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$WS/known_hosts -o StrictHostKeyChecking=yes"
printf '{"exocomp_fleet_pubkey": %s}' "$("$PYTHON" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip()))' "$FLEET.pub")" > onboard-vars.json
printf '{"all":{"hosts":{"web1":{"ansible_host":"%s","ansible_port":%s,"ansible_user":"root"}}}}' "$ADDR" "$PORT" > inventory.json
ansible-playbook -i inventory.json --private-key "$BOOTSTRAP" -e @onboard-vars.json "$ONBOARD" >/dev/null
`;

async function round(kind: 'exocomp' | 'bare', dir: string): Promise<number> {
  const bootstrap = await generateKeyPair(dir, 'bootstrap');
  const fleet = await generateKeyPair(dir, 'fleet');
  const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2222 });
  await host.start();
  const ws = await mkdtemp(join(dir, `${kind}-`));
  try {
    if (kind === 'bare') {
      await writeFile(join(ws, 'onboard.sh'), bareOnboard, { mode: 0o755 });
      await writeFile(`${fleet.privateKeyPath}.pub`, `${fleet.publicKey}\n`);
      const started = performance.now();
      const result = await runProcess('bash', [join(ws, 'onboard.sh')], {
        env: {
          ...process.env,
          WS: ws,
          PYTHON: python,
          ADDR: host.address,
          PORT: String(host.port),
          FLEET: fleet.privateKeyPath,
          BOOTSTRAP: bootstrap.privateKeyPath,
          ONBOARD: join(root, 'playbooks/onboard.yml'),
        },
      });
      if (result.code !== 0) throw new Error(`bare onboarding failed:\n${result.stderr}`);
      return performance.now() - started;
    }
    await fillBenchWorkspace(ws, host);
    await runProcess('git', ['init', '-q', '--bare', join(ws, 'ledger.git')]);
    // When the events arrive. The banner wait and then the host-key scan start once apply captured its hosts,
    // beside apply's success write: the figure spans that write, ssh-wait and the hand-over too.
    const arrived = new Map<string, number>();
    let partial = '';
    const result = await runProcess(
      process.execPath,
      provisionRunArgs(
        join(root, 'dist/cli.js'),
        ws,
        standinPath,
        fleet.privateKeyPath,
        bootstrap.privateKeyPath,
        '--json',
      ),
      {
        cwd: ws,
        env: cliEnv(ws),
        onOutput: (chunk, stream) => {
          if (stream !== 'stdout') return;
          const lines = (partial + chunk).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines.filter(Boolean)) {
            const event = JSON.parse(line) as { event?: string; step?: string; message?: string };
            if (event.step === 'apply' && event.event === 'info' && event.message?.startsWith('captured '))
              arrived.set('captured', performance.now());
            if (event.step === 'onboard' && event.event === 'step-succeeded')
              arrived.set('onboarded', performance.now());
          }
        },
      },
    );
    if (result.code !== 0) throw new Error(`exocomp run failed:\n${result.stdout}\n${result.stderr}`);
    const [captured, onboarded] = [arrived.get('captured'), arrived.get('onboarded')];
    if (captured === undefined || onboarded === undefined)
      throw new Error(`no capture line of apply or step-succeeded event of onboard:\n${result.stdout}`);
    return onboarded - captured;
  } finally {
    await host.destroy();
  }
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-onboard-'));
try {
  const { exocomp: e, bare: b } = await sideBySide(['bare', 'exocomp'] as const, rounds, (kind) => round(kind, dir));
  if (e !== undefined && b !== undefined) {
    console.log(ratioLine('onboarding', { name: 'exocomp step', ms: e }, { name: 'bare keyscan + play', ms: b }, 1.1));
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
