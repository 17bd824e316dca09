/** `approval show` and `provision status --format markdown` read the plan view and the timeline from a git ledger. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/program.js';
import { planJsonSchema } from '../../src/domain/plan.js';
import { buildPlanView } from '../../src/domain/plan-view.js';
import { awaitApproval, failStep, resumeWorkflow, startStep, type Workflow } from '../../src/domain/workflow.js';
import { LEDGER_PATHS, serializeRecord } from '../../src/ledger/records.js';
import { commitToLedger } from '../support/ledger-git.js';
import { localLease, sampleWorkflow, T0 } from '../support/workflows.js';

const run = promisify(execFile);

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('approval show and provision status --format markdown', () => {
  let ledger: string;
  const plan = planJsonSchema.parse({
    format_version: '1.2',
    resource_changes: [
      {
        address: 'terraform_data.web1',
        change: { actions: ['delete', 'create'], replace_paths: [['triggers_replace']] },
        action_reason: 'replace_because_cannot_update',
      },
      {
        address: 'terraform_data.web2',
        change: { actions: ['delete'] },
        action_reason: 'delete_because_no_resource_config',
      },
    ],
  });
  const awaiting = (id: string): Workflow =>
    awaitApproval(sampleWorkflow(id, { requireApproval: true }), T0, {
      fingerprint: 'f'.repeat(64),
      summary: '+1 ~0 -2',
    });

  beforeAll(async () => {
    ledger = await mkdtemp(join(tmpdir(), 'exocomp-show-'));
    await run('git', ['init', '-q', '--bare', ledger]);
    let retried = sampleWorkflow('edge-2');
    retried = startStep(retried, 'apply', localLease('r1', T0), T0);
    retried = failStep(retried, 'apply', 'r1', new Date(T0.getTime() + 5000), { kind: 'tool-failed', summary: 'x' });
    retried = resumeWorkflow(retried, new Date(T0.getTime() + 6000));
    retried = startStep(retried, 'apply', localLease('r2', T0), new Date(T0.getTime() + 7000));
    const view = buildPlanView({
      plan,
      fingerprint: 'f'.repeat(64),
      workflowId: 'edge-1',
      workspace: 'edge',
      currentHosts: [
        { name: 'web1', pins: ['127.0.9.1'] },
        { name: 'web2', pins: ['127.0.9.2'] },
      ],
    });
    await commitToLedger(
      ledger,
      {
        [LEDGER_PATHS.workflow('edge-1')]: serializeRecord(awaiting('edge-1')),
        [LEDGER_PATHS.planView('edge-1')]: serializeRecord(view),
        [LEDGER_PATHS.workflow('edge-2')]: serializeRecord(retried),
      },
      'seed',
    );
  });
  afterAll(async () => {
    await rm(ledger, { recursive: true, force: true });
  });

  it('approval show prints the hosts and resources the approval releases', async () => {
    const text = await cli(['approval', 'show', 'edge-1', '--ledger', ledger]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('web1  replaced: new host key, onboarded again; pins retired: 127.0.9.1');
    expect(text.stdout).toContain('web2  destroyed: leaves tf:edge; pins retired: 127.0.9.2');
    expect(text.stdout).toMatch(
      /-\/\+ +replace +terraform_data\.web1 +\(an attribute that cannot change in place changed; forced by triggers_replace\)/,
    );
    const markdown = await cli(['approval', 'show', 'edge-1', '--ledger', ledger, '--format', 'markdown']);
    expect(markdown.stdout).toContain('| replace | `terraform_data.web1` |');
    const json = await cli(['approval', 'show', 'edge-1', '--ledger', ledger, '--json']);
    expect(JSON.parse(json.stdout).planView.hosts).toHaveLength(2);
  });

  it('provision status --format markdown draws the retried step as two bars', async () => {
    const result = await cli(['provision', 'status', 'edge-2', '--ledger', ledger, '--format', 'markdown']);
    expect(result.code, result.stderr).toBe(0);
    const gantt = /```mermaid\n([\s\S]*?)\n```/.exec(result.stdout)?.[1] ?? '';
    expect(gantt.split('\n').filter((l) => l.startsWith('  attempt'))).toEqual([
      `  attempt 1 failed :crit, a1, ${T0.getTime()}, ${T0.getTime() + 5000}`,
      expect.stringMatching(/^ {2}attempt 2 running :active, a2, \d+, \d+$/),
    ]);
  });
});
