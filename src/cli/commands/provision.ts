import { Option, type Command } from 'commander';
import { parseDuration } from '../../domain/duration.js';
import { parseUserName, parseWorkflowId } from '../../domain/names.js';
import { checkPlaybookFile } from '../../app/input-checks.js';
import { renderText, viewWorkflow } from '../../domain/render.js';
import type { Workflow } from '../../domain/workflow.js';
import { renderDriftHistory } from '../../domain/drift-history.js';
import { describeMissedTicks, missedTicksOf } from '../../domain/schedule-fires.js';
import { listDriftHistories, listScheduleFires, listWorkflows, requireWorkflow } from '../../ledger/records.js';
import { localGate } from '../../app/approval-gates/local.js';
import { continueWorkflow, type ContinueOutcome } from '../../app/continue-workflow.js';
import { newWorkflowId } from '../../app/provision.js';
import type { AppContext } from '../../app/context.js';
import { applyResumeOverrides } from '../../app/resume-overrides.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';
import { addKeyOptions, addPlayOptions, addApplyOptions, allowLocalStateOption, readVars, runInputs, workspaceNameFor } from '../run-options.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function report(io: Io, json: boolean, context: AppContext, outcome: ContinueOutcome): number {
  const workflow: Workflow = outcome.workflow;
  const view = viewWorkflow(workflow, context.now());
  if (json) io.out(JSON.stringify({ result: view }));
  else {
    io.out(renderText(view));
    if (outcome.kind === 'awaiting-approval') {
      io.out(`\nawaiting approval — decide with:\n  exocomp approval decide ${workflow.id} --approve\n  exocomp approval decide ${workflow.id} --reject`);
    }
  }
  if (outcome.kind === 'awaiting-approval') return 0;
  if (outcome.kind === 'rejected') return 1;
  return outcome.kind === 'ran' && outcome.ok ? 0 : 1;
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
            .addOption(new Option('--ssh-wait <duration>', 'how long to wait for SSH banners (90s, 5m, 1h)').default('5m'))
            .addOption(new Option('--onboard-playbook <file>', 'replaces the seeded onboarding playbook'))
            .addOption(new Option('--onboard-user <name>', 'the fleet user onboarding creates').default('exocomp'))
            .addOption(new Option('--remote-user <name>', 'user the configure play connects as (default: the onboard user)'))
            .addOption(new Option('--rotate-host-key <host>', 'accept a changed host key for this host (repeatable)').argParser(collect).default([]))
            .addOption(new Option('--require-approval', 'plan, then wait for `exocomp approval decide` before applying').default(false))
            .addOption(new Option('--wait', 'with --require-approval: block until the decision, then continue').default(false))
            .addOption(new Option('--id <workflow-id>', 'continue this workflow instead of starting a new one')),
        ),
      ),
    ),
  ).action(async (workspace: string, playbook: string, options: Record<string, unknown>) => {
    // Every input is parsed before the ledger is touched.
    const settings = globalSettings(options);
    const sshWaitMs = parseDuration(String(options.sshWait));
    const name = workspaceNameFor(workspace, options.workspaceName);
    const requestedId = typeof options.id === 'string' ? parseWorkflowId(options.id) : undefined;
    parseUserName(String(options.onboardUser), '--onboard-user');
    if (typeof options.remoteUser === 'string') parseUserName(options.remoteUser, '--remote-user');
    checkPlaybookFile(playbook, 'playbook');
    if (typeof options.onboardPlaybook === 'string') checkPlaybookFile(options.onboardPlaybook, '--onboard-playbook');
    const vars = readVars(options.varsFile as string | undefined);
    const inputs = runInputs(options, process.env, options.rotateHostKey as string[], io.secrets);
    const context = await buildContext(settings, io);
    const outcome = await continueWorkflow(context, {
      workflowId: requestedId ?? newWorkflowId(name),
      create: () => ({
        workspacePath: workspace,
        workspaceName: name,
        playbook,
        requireApproval: options.requireApproval === true,
        trigger: { kind: 'local' },
        options: {
          sshWaitMs,
          onboardUser: String(options.onboardUser),
          ...(typeof options.onboardPlaybook === 'string' ? { onboardPlaybook: options.onboardPlaybook } : {}),
          ...(typeof options.remoteUser === 'string' ? { remoteUser: options.remoteUser } : {}),
          ...(vars ? { vars } : {}),
          check: options.check === true,
          ...(typeof options.limit === 'string' ? { limit: options.limit } : {}),
          ...(typeof options.tags === 'string' ? { tags: options.tags } : {}),
        },
      }),
      inputs,
      gate: localGate({ wait: options.wait === true }),
    });
    process.exitCode = report(io, settings.json, context, outcome);
  });

  addLedgerOptions(
    addKeyOptions(
      provision
        .command('resume')
        .description('continue a workflow from the ledger: succeeded steps are skipped, the failed or interrupted step runs again')
        .argument('<id>', 'workflow id')
        .addOption(new Option('--tofu-binary <path>', 'OpenTofu/Terraform binary'))
        .addOption(allowLocalStateOption())
        .addOption(new Option('--ssh-wait <duration>', 'wait this long for SSH banners from now on (recorded in the ledger)'))
        .addOption(new Option('--playbook <file>', 'the configure playbook from now on, e.g. when the recorded one moved (recorded in the ledger)'))
        .addOption(new Option('--rotate-host-key <host>', 'accept a changed host key for this host (repeatable)').argParser(collect).default([]))
        .addOption(new Option('--wait', 'block until a pending approval is decided').default(false)),
    ),
  ).action(async (id: string, options: Record<string, unknown>) => {
    parseWorkflowId(id);
    if (typeof options.playbook === 'string') checkPlaybookFile(options.playbook, '--playbook');
    const settings = globalSettings(options);
    const inputs = runInputs(options, process.env, options.rotateHostKey as string[], io.secrets);
    const context = await buildContext(settings, io);
    const overrides = {
      ...(typeof options.sshWait === 'string' ? { sshWaitMs: parseDuration(options.sshWait) } : {}),
      ...(typeof options.playbook === 'string' ? { playbook: options.playbook } : {}),
    };
    for (const change of await applyResumeOverrides(context, id, overrides)) context.progress.emit({ type: 'info', message: `recorded: ${change}` });
    const outcome = await continueWorkflow(context, { workflowId: id, inputs, gate: localGate({ wait: options.wait === true }) });
    process.exitCode = report(io, settings.json, context, outcome);
  });

  addLedgerOptions(provision.command('status').description('show a workflow from the ledger (all workflows when no id is given)').argument('[id]', 'workflow id')).action(
    async (id: string | undefined, options: Record<string, unknown>) => {
      if (id !== undefined) parseWorkflowId(id);
      const settings = globalSettings(options);
      const context = await buildContext(settings, io);
      const snapshot = await context.store.read();
      const now = context.now();
      if (id !== undefined) {
        const view = viewWorkflow(requireWorkflow(snapshot, id), now);
        io.out(settings.json ? JSON.stringify(view) : renderText(view));
        return;
      }
      const listed = listWorkflows(snapshot);
      const { workflows } = listed;
      const drift = listDriftHistories(snapshot);
      const errors = [...listed.errors, ...drift.errors];
      if (settings.json) {
        io.out(
          JSON.stringify({
            workflows: workflows.map((w) => viewWorkflow(w, now)),
            drift: drift.histories,
            schedules: listScheduleFires(snapshot).map((f) => ({
              name: f.name,
              cron: f.cron,
              fires: f.fires.length,
              missedTicks: missedTicksOf(f, now).map((t) => t.toISOString()),
            })),
            errors: errors.map((e) => ({ file: e.file, reason: e.reason })),
          }),
        );
      } else {
        if (workflows.length === 0) io.out(`no workflows in ${context.store.description}`);
        for (const w of workflows) io.out(`${w.id}  ${w.state.padEnd(17)} ${w.workspace.name}  ${w.playbook}  ${w.createdAt}`);
        for (const history of drift.histories) io.out(`\n${renderDriftHistory(history)}`);
        for (const schedule of listScheduleFires(snapshot)) {
          const line = describeMissedTicks(schedule, missedTicksOf(schedule, now));
          if (line) io.out(`\n${line}`);
        }
        for (const e of errors) io.err(e.message);
      }
      if (errors.length > 0) process.exitCode = 1;
    },
  );
}
