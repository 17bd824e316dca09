import { Option, type Command } from 'commander';
import { z } from 'zod';
import { parseDuration } from '../../domain/duration.js';
import { parseUserName, parseWorkflowId } from '../../domain/names.js';
import { renderDriftHistory } from '../../domain/drift-history.js';
import { describeMissedTicks } from '../../domain/schedule-fires.js';
import { renderMarkdown, renderText, viewWorkflow } from '../../domain/render.js';
import { shownState } from '../../domain/workflow.js';
import { checkPlaybookFile } from '../../app/provision/input-checks.js';
import { localGate } from '../../app/approval/gates/local.js';
import { approvalToShow } from '../../app/approval/plan-view.js';
import { continueWorkflow, type ContinueOutcome } from '../../app/provision/continue-workflow.js';
import { newWorkflowId } from '../../app/provision/provision.js';
import type { AppContext } from '../../app/runtime/context.js';
import { resumeWorkflow } from '../../app/provision/resume-overrides.js';
import { ledgerStatus, workflowStatus, type LedgerStatus } from '../../app/status/status.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';
import {
  addApplyOptions,
  addKeyOptions,
  addPlayOptions,
  allowLocalStateOption,
  allowDestroyOption,
  protectOption,
  hostKeysOption,
  bastionOption,
  readVars,
  runInputs,
  workspaceNameFor,
} from '../run-options.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const userName = (what: string) => z.string().transform((name) => parseUserName(name, what));
const playbookFile = (what: string) => z.string().transform((file) => (checkPlaybookFile(file, what), file));

// Every input is parsed before the ledger is touched, in this order.
const runOptions = z.object({
  sshWait: z.string().transform(parseDuration),
  workspaceName: z.string().optional(),
  id: z.string().transform(parseWorkflowId).optional(),
  onboardUser: userName('--onboard-user'),
  remoteUser: userName('--remote-user').optional(),
  onboardPlaybook: playbookFile('--onboard-playbook').optional(),
  varsFile: z.string().optional(),
  rotateHostKey: z.array(z.string()),
  requireApproval: z.boolean(),
  wait: z.boolean(),
  check: z.boolean(),
  limit: z.string().optional(),
  tags: z.string().optional(),
});

const resumeOptions = z.object({
  playbook: playbookFile('--playbook').optional(),
  sshWait: z.string().transform(parseDuration).optional(),
  rotateHostKey: z.array(z.string()),
  wait: z.boolean(),
});

function report(io: Io, json: boolean, context: AppContext, outcome: ContinueOutcome): number {
  const { workflow } = outcome;
  const view = viewWorkflow(workflow, context.now());
  if (json) io.out(JSON.stringify({ result: view }));
  else {
    io.out(renderText(view));
    if (outcome.kind === 'awaiting-approval') {
      io.out(
        `\nawaiting approval — decide with:\n  exocomp approval decide ${workflow.id} --approve\n  exocomp approval decide ${workflow.id} --reject`,
      );
    }
  }
  if (outcome.kind === 'awaiting-approval') return 0;
  if (outcome.kind === 'rejected') return 1;
  return outcome.kind === 'ran' && outcome.ok ? 0 : 1;
}

/** Every workflow, the drift checks and the missed schedule ticks; an unreadable record is an error line and exit 1. */
function renderStatus(io: Io, json: boolean, status: LedgerStatus): void {
  const { workflows, drift, schedules, errors, now } = status;
  if (json) {
    io.out(
      JSON.stringify({
        workflows: workflows.map((w) => viewWorkflow(w, now)),
        drift,
        schedules: schedules.map((s) => ({ ...s, missedTicks: s.missedTicks.map((t) => t.toISOString()) })),
        errors: errors.map((e) => ({ file: e.file, reason: e.reason })),
      }),
    );
  } else {
    if (workflows.length === 0) io.out(`no workflows in ${status.where}`);
    for (const w of workflows)
      io.out(`${w.id}  ${shownState(w).padEnd(17)} ${w.workspace.name}  ${w.playbook}  ${w.createdAt}`);
    for (const history of drift) io.out(`\n${renderDriftHistory(history)}`);
    for (const schedule of schedules) {
      const line = describeMissedTicks(schedule, schedule.missedTicks);
      if (line) io.out(`\n${line}`);
    }
    for (const e of errors) io.err(e.message);
  }
  if (errors.length > 0) process.exitCode = 1;
}

export function registerProvision(program: Command, io: Io): void {
  const provision = program.command('provision').description('run, follow and resume the provision chain');

  addLedgerOptions(
    addPlayOptions(
      addKeyOptions(
        addApplyOptions(
          provision
            .command('run')
            .description('apply → bounded SSH wait → onboard with pinned host keys → configure')
            .argument('<workspace>', 'directory of the OpenTofu/Terraform workspace')
            .argument('<playbook>', 'the configure playbook')
            .addOption(
              new Option('--ssh-wait <duration>', 'how long to wait for SSH banners (90s, 5m, 1h)').default('5m'),
            )
            .addOption(new Option('--onboard-playbook <file>', 'replaces the seeded onboarding playbook'))
            .addOption(new Option('--onboard-user <name>', 'the fleet user onboarding creates').default('exocomp'))
            .addOption(
              new Option('--remote-user <name>', 'user the configure play connects as (default: the onboard user)'),
            )
            .addOption(
              new Option('--rotate-host-key <host>', 'accept a changed host key for this host (repeatable)')
                .argParser(collect)
                .default([]),
            )
            .addOption(hostKeysOption())
            .addOption(bastionOption())
            .addOption(
              new Option('--require-approval', 'plan, then wait for `exocomp approval decide` before applying').default(
                false,
              ),
            )
            .addOption(
              new Option('--wait', 'with --require-approval: block until the decision, then continue').default(false),
            )
            .addOption(allowDestroyOption())
            .addOption(protectOption())
            .addOption(new Option('--id <workflow-id>', 'continue this workflow instead of starting a new one')),
        ),
      ),
    ),
  ).action(async (workspace: string, playbook: string, raw: Record<string, unknown>) => {
    const settings = globalSettings(raw);
    const o = parseOptions(runOptions, raw);
    const name = workspaceNameFor(workspace, o.workspaceName);
    const vars = readVars(o.varsFile);
    const inputs = await runInputs(raw, process.env, o.rotateHostKey, io);
    const context = await buildContext(settings, io);
    const outcome = await continueWorkflow(context, {
      workflowId: o.id ?? newWorkflowId(name),
      newId: o.id === undefined,
      create: () => ({
        workspacePath: workspace,
        workspaceName: name,
        playbook,
        requireApproval: o.requireApproval,
        trigger: { kind: 'local' },
        options: {
          sshWaitMs: o.sshWait,
          onboardUser: o.onboardUser,
          ...(o.onboardPlaybook !== undefined ? { onboardPlaybook: o.onboardPlaybook } : {}),
          ...(o.remoteUser !== undefined ? { remoteUser: o.remoteUser } : {}),
          ...(vars ? { vars } : {}),
          check: o.check,
          ...(o.limit !== undefined ? { limit: o.limit } : {}),
          ...(o.tags !== undefined ? { tags: o.tags } : {}),
        },
      }),
      inputs,
      gate: localGate({ wait: o.wait }),
    });
    process.exitCode = report(io, settings.json, context, outcome);
  });

  addLedgerOptions(
    addKeyOptions(
      provision
        .command('resume')
        .description(
          'continue a workflow from the ledger: succeeded steps are skipped, the failed or interrupted step runs again',
        )
        .argument('<id>', 'workflow id')
        .addOption(new Option('--tofu-binary <path>', 'OpenTofu/Terraform binary'))
        .addOption(allowLocalStateOption())
        .addOption(allowDestroyOption())
        .addOption(protectOption())
        .addOption(
          new Option('--ssh-wait <duration>', 'wait this long for SSH banners from now on (recorded in the ledger)'),
        )
        .addOption(
          new Option(
            '--playbook <file>',
            'the configure playbook from now on, e.g. when the recorded one moved (recorded in the ledger)',
          ),
        )
        .addOption(
          new Option('--rotate-host-key <host>', 'accept a changed host key for this host (repeatable)')
            .argParser(collect)
            .default([]),
        )
        .addOption(hostKeysOption())
        .addOption(bastionOption())
        .addOption(new Option('--wait', 'block until a pending approval is decided').default(false)),
    ),
  ).action(async (id: string, raw: Record<string, unknown>) => {
    parseWorkflowId(id);
    const o = parseOptions(resumeOptions, raw);
    const settings = globalSettings(raw);
    const inputs = await runInputs(raw, process.env, o.rotateHostKey, io);
    const context = await buildContext(settings, io);
    const outcome = await resumeWorkflow(context, {
      workflowId: id,
      overrides: {
        ...(o.sshWait !== undefined ? { sshWaitMs: o.sshWait } : {}),
        ...(o.playbook !== undefined ? { playbook: o.playbook } : {}),
      },
      inputs,
      gate: localGate({ wait: o.wait }),
    });
    process.exitCode = report(io, settings.json, context, outcome);
  });

  addLedgerOptions(
    provision
      .command('status')
      .description('show a workflow from the ledger (all workflows when no id is given)')
      .argument('[id]', 'workflow id')
      .addOption(
        new Option('--format <format>', 'one workflow as text, or as markdown (with its timeline as a Mermaid gantt)')
          .choices(['text', 'markdown'])
          .default('text'),
      ),
  ).action(async (id: string | undefined, raw: Record<string, unknown>) => {
    if (id !== undefined) parseWorkflowId(id);
    const settings = globalSettings(raw);
    const context = await buildContext(settings, io);
    if (id === undefined) return renderStatus(io, settings.json, await ledgerStatus(context));
    if (raw.format === 'markdown' && !settings.json) {
      const { workflow, planView } = await approvalToShow(context, id);
      return io.out(renderMarkdown(viewWorkflow(workflow, context.now()), { planView }));
    }
    const view = await workflowStatus(context, id);
    io.out(settings.json ? JSON.stringify(view) : renderText(view));
  });
}
