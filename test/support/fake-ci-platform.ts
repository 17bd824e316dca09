/** A CiPlatform for unit tests of the core: records what the core asked of it; every answer is set by the test. */
import { ExocompError } from '../../src/domain/errors.js';
import type { Workflow } from '../../src/domain/workflow.js';
import type { CiPlatform, GateApproval } from '../../src/app/ports/ci-platform.js';
import { localHolder, probeLocalHolder } from '../../src/app/runtime/lease.js';

export interface FakeCiPlatform extends CiPlatform {
  calls: string[];
  outputs: Record<string, string>;
  dispatched: Array<{ workflow: string; target: string | undefined }>;
}

export function fakeCiPlatform(
  answers: {
    approval?: GateApproval;
    mayDecide?: boolean;
    actor?: string;
    startedRun?: { id: number; url: string };
  } = {},
): FakeCiPlatform {
  const calls: string[] = [];
  const outputs: Record<string, string> = {};
  const dispatched: Array<{ workflow: string; target: string | undefined }> = [];
  const actor = answers.actor ?? 'bob';
  return {
    name: 'fake',
    calls,
    outputs,
    dispatched,
    run: {
      id: 9001,
      url: 'https://ci.example/runs/9001',
      actor,
      changeRequest: undefined,
      trigger: { kind: 'github', runId: 9001 },
      decisionVia: 'fake run 9001',
    },
    log: {
      info: () => undefined,
      notice: () => undefined,
      warning: () => undefined,
      error: () => undefined,
      startGroup: () => undefined,
      endGroup: () => undefined,
    },
    input: () => '',
    maskSecret: () => undefined,
    setOutput: (name, value) => {
      outputs[name] = value;
    },
    writeSummary: async () => undefined,
    upsertStatusComment: async () => ({ kind: 'created', id: 1 }),
    async gatedJobApproval(gate) {
      calls.push(`gatedJobApproval ${gate ?? ''}`);
      if (!answers.approval) throw new ExocompError('approval', `nobody approved ${gate ?? 'this job'}`);
      return answers.approval;
    },
    async mayDecide(who) {
      calls.push(`mayDecide ${who}`);
      return {
        allowed: answers.mayDecide ?? true,
        reason: `${who} has ${answers.mayDecide === false ? 'read' : 'write'} access`,
      };
    },
    continuationTarget: (_workflow, target) => ({ target: target ?? 'provision.yml', ref: 'main' }),
    async dispatchContinuation(workflow: Workflow, target) {
      calls.push(`dispatch ${workflow.id}`);
      dispatched.push({ workflow: workflow.id, target });
      return {
        target: target ?? 'provision.yml',
        ref: 'main',
        ...(answers.startedRun ? { run: answers.startedRun } : {}),
      };
    },
    holder: () => localHolder(),
    probeHolder: probeLocalHolder,
  };
}
