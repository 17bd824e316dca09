/**
 * npm run bench:chain — wall time of `exocomp provision run` against a plain
 * shell script running the same tofu, ssh-keyscan and ansible-playbook
 * commands, side by side, each round on fresh disposable hosts. Prints medians
 * and the ratio (target ≤ 1.05), and the CPU each side's processes used.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../test/support/loopback-host.js';
import { standinPath } from '../test/support/tofu-standin.js';
import {
  sideBySide,
  provisionRunArgs,
  ratioLine,
  fillBenchWorkspace,
  childCpuMs,
  cpuLine,
  cliEnv,
  ansiblePython,
} from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const python = await ansiblePython();

const baselineScript = `#!/bin/bash
# What people glue together by hand: the same commands, no ledger, no pinning store
# (with ansible pipelining, as exocomp runs it, so the plays themselves cost the same).
set -euo pipefail
cd "$WS"
"$TOFU" init -input=false -no-color >/dev/null
"$TOFU" validate -no-color >/dev/null
"$TOFU" plan -input=false -no-color -out=plan.tfplan >/dev/null
"$TOFU" apply -input=false -no-color plan.tfplan >/dev/null
"$TOFU" output -json > outputs.json
"$PYTHON" -c 'import json; print(json.dumps(json.load(open("outputs.json"))["ansible_inventory"]["value"]))' > inventory.json
until ssh-keyscan -T 1 -p "$PORT" "$ADDR" > known_hosts 2>/dev/null && [ -s known_hosts ]; do sleep 0.1; done
export ANSIBLE_PIPELINING=True ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$WS/known_hosts -o StrictHostKeyChecking=yes"
printf '{"exocomp_fleet_pubkey": %s}' "$("$PYTHON" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip()))' "$FLEET.pub")" > onboard-vars.json
ansible-playbook -i inventory.json --private-key "$BOOTSTRAP" -e @onboard-vars.json "$ONBOARD" >/dev/null
eval "$(ssh-agent -s)" >/dev/null
ssh-add -q "$FLEET"
ansible-playbook -i inventory.json -e ansible_user=exocomp "$SITE" >/dev/null
ssh-agent -k >/dev/null
`;

async function round(kind: 'exocomp' | 'baseline', dir: string): Promise<number> {
  const bootstrap = await generateKeyPair(dir, 'bootstrap');
  const fleet = await generateKeyPair(dir, 'fleet');
  const host: LoopbackHost = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2222 });
  await host.start();
  const ws = await mkdtemp(join(dir, `${kind}-`));
  await fillBenchWorkspace(ws, host);
  try {
    const cpuBefore = await childCpuMs();
    const started = performance.now();
    let result;
    if (kind === 'exocomp') {
      await runProcess('git', ['init', '-q', '--bare', join(ws, 'ledger.git')]);
      result = await runProcess(
        process.execPath,
        provisionRunArgs(join(root, 'dist/cli.js'), ws, standinPath, fleet.privateKeyPath, bootstrap.privateKeyPath),
        {
          cwd: ws,
          env: cliEnv(ws),
        },
      );
    } else {
      await writeFile(join(ws, 'baseline.sh'), baselineScript, { mode: 0o755 });
      await writeFile(`${fleet.privateKeyPath}.pub`, `${fleet.publicKey}\n`);
      result = await runProcess('bash', [join(ws, 'baseline.sh')], {
        cwd: ws,
        env: {
          ...process.env,
          WS: ws,
          PYTHON: python,
          TOFU: standinPath,
          ADDR: host.address,
          PORT: String(host.port),
          FLEET: fleet.privateKeyPath,
          BOOTSTRAP: bootstrap.privateKeyPath,
          ONBOARD: join(root, 'playbooks/onboard.yml'),
          SITE: join(ws, 'site.yml'),
        },
      });
    }
    const elapsed = performance.now() - started;
    cpu[kind].push((await childCpuMs()) - cpuBefore);
    if (result.code !== 0) throw new Error(`${kind} run failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
    return elapsed;
  } finally {
    await host.destroy();
  }
}

const cpu: Record<'exocomp' | 'baseline', number[]> = { exocomp: [], baseline: [] };
const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-chain-'));
try {
  const { exocomp: e, baseline: b } = await sideBySide(['baseline', 'exocomp'] as const, rounds, (kind) =>
    round(kind, dir),
  );
  if (e !== undefined && b !== undefined) {
    console.log(ratioLine('whole chain', { name: 'exocomp', ms: e }, { name: 'shell baseline', ms: b }, 1.05));
    console.log(cpuLine({ name: 'exocomp', ms: cpu.exocomp }, { name: 'shell baseline', ms: cpu.baseline }));
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
