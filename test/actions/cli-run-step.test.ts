/**
 * The CLI inside a workflow `run:` step (issue 10): a host prints workflow
 * commands during `exocomp playbook run`, and the runner emulation (which
 * processes commands as the runner does) shows them as text — no annotation,
 * no output, no mask — in the CLI's text output and in its `--json` events,
 * which stay valid JSON. Real sshd host, real ansible-core, the real CLI bundle.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { events, RunnerJob, type StepResult } from '../support/action-runner.js';
import { cliPath } from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { SPOOFED_COMMANDS, spoofPlaybook } from '../support/plays.js';

const REPOSITORY = 'acme/infra';
const SPOOF = SPOOFED_COMMANDS;

describe('the CLI in a workflow run: step, while a host prints workflow commands', () => {
  let dir: string;
  let host: LoopbackHost;
  let job: RunnerJob;
  let text: StepResult;
  let json: StepResult;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-cli-step-'));
    const key = await generateKeyPair(dir, 'root');
    host = await createLoopbackHost({ rootAuthorizedKey: key.publicKey, port: 2244 });
    await host.start();
    await writeFile(join(dir, 'spoof.yml'), spoofPlaybook());
    await writeFile(join(dir, 'failing.yml'), spoofPlaybook({ fail: true }));
    await writeFile(
      join(dir, 'hosts.yml'),
      JSON.stringify({
        all: { hosts: { web: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
      }),
    );
    await runProcess('git', ['init', '-q', '--bare', join(dir, 'ledger.git')]);
    job = await RunnerJob.start();
    const step = (script: string) =>
      job.shell({
        shell: 'bash',
        script,
        run: {
          repository: REPOSITORY,
          runId: 7500,
          runAttempt: 1,
          actor: 'alice',
          workflowRef: `${REPOSITORY}/.github/workflows/converge.yml@refs/heads/main`,
        },
        event: events.push(REPOSITORY, 'alice'),
        githubUrl: 'http://127.0.0.1:9',
        githubToken: 'ghs_unused',
        workspace: dir,
        env: {
          EXOCOMP: cliPath,
          KEY: key.privateKeyPath,
          HOST: `[${host.address}]:${host.port}`,
          ANSIBLE_CALLBACK_RESULT_FORMAT: 'yaml',
        },
      });
    const play = (playbook: string) =>
      `node "$EXOCOMP" playbook run ${playbook} --inventory hosts.yml --remote-user root --ssh-identity "$KEY" --ledger ledger.git`;
    text = await step(`node "$EXOCOMP" host onboard "$HOST" --ledger ledger.git\n${play('spoof.yml')}\n`);
    json = await step(`${play('failing.yml')} --json\n`);
  });

  afterAll(async () => {
    await job?.close();
    await host?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs the plays: the text one passes, the --json one fails as its task does', () => {
    expect(text.code, `${text.stdout}\n${text.stderr}`).toBe(0);
    expect(json.code, `${json.stdout}\n${json.stderr}`).toBe(1);
  });

  it('shows the spoofed lines as text: no annotation, no output, no mask', () => {
    for (const result of [text, json]) {
      expect(result.annotations.filter((a) => a.message.includes('spoofed'))).toEqual([]);
      expect(result.outputs).toEqual({});
      expect(result.masks).toEqual([]);
    }
    const shown = text.log
      .replaceAll('\u200b', '')
      .split('\n')
      .map((line) => line.trim());
    for (const line of SPOOF) expect(shown).toContain(line);
  });

  it('keeps --json output valid JSON that still holds what the host printed', () => {
    const events = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const said = JSON.stringify(events);
    expect(events.at(-1)).toMatchObject({ result: { ok: false } });
    for (const line of SPOOF) expect(said).toContain(JSON.stringify(line).slice(1, -1));
  });
});
