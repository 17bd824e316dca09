import { Option, type Command } from 'commander';
import { userInfo } from 'node:os';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { parseWorkflowId } from '../../domain/names.js';
import { renderApprovalText, renderMarkdown, renderText, viewWorkflow } from '../../domain/render.js';
import { decide, pendingApprovals } from '../../app/approval/approvals.js';
import { approvalToShow } from '../../app/approval/plan-view.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

const decideOptions = z
  .object({
    approve: z.boolean().optional(),
    reject: z.boolean().optional(),
    comment: z.string().optional(),
    by: z.string().optional(),
  })
  .transform(({ approve, reject, ...rest }) => {
    if ((approve === true) === (reject === true)) throw new UsageError('say exactly one of --approve or --reject');
    return { ...rest, approve: approve === true };
  });

export function registerApproval(program: Command, io: Io): void {
  const approval = program
    .command('approval')
    .description('decide and list approvals of workflows run with --require-approval');

  addLedgerOptions(
    approval
      .command('decide')
      .description('record the decision on a workflow waiting for approval')
      .argument('<id>', 'workflow id')
      .addOption(new Option('--approve', 'release the apply'))
      .addOption(new Option('--reject', 'end the workflow as rejected'))
      .addOption(new Option('--comment <text>', 'recorded with the decision'))
      .addOption(new Option('--by <name>', 'who decides (default: the current user)')),
  ).action(async (id: string, options: Record<string, unknown>) => {
    const o = parseOptions(decideOptions, options);
    parseWorkflowId(id);
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const workflow = await decide(context, id, {
      approve: o.approve,
      by: o.by ?? userInfo().username,
      via: 'cli',
      ...(o.comment !== undefined ? { comment: o.comment } : {}),
    });
    const view = viewWorkflow(workflow, context.now());
    if (settings.json) io.out(JSON.stringify({ result: view }));
    else {
      io.out(renderText(view));
      if (workflow.approval.state === 'approved')
        io.out(
          `\ncontinue with: exocomp provision resume ${id}  (a waiting \`provision run --wait\` continues by itself)`,
        );
    }
  });

  addLedgerOptions(
    approval
      .command('show')
      .description(
        'what approving a workflow releases: the hosts and resources its plan changes, and the configuration preview',
      )
      .argument('<id>', 'workflow id')
      .addOption(new Option('--format <format>', 'text or markdown').choices(['text', 'markdown']).default('text')),
  ).action(async (id: string, options: Record<string, unknown>) => {
    parseWorkflowId(id);
    const { format } = parseOptions(z.object({ format: z.enum(['text', 'markdown']) }), options);
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const { workflow, planView } = await approvalToShow(context, id);
    const view = viewWorkflow(workflow, context.now());
    if (settings.json) io.out(JSON.stringify({ workflow: view, planView: planView ?? null }));
    else if (format === 'markdown')
      // The ledger record is the whole view: nothing is cut here.
      io.out(renderMarkdown(view, { planView, planViewLimit: Number.MAX_SAFE_INTEGER }));
    else io.out(renderApprovalText(view, planView));
  });

  addLedgerOptions(approval.command('list').description('workflows waiting for a decision')).action(
    async (options: Record<string, unknown>) => {
      const settings = globalSettings(options);
      const context = await buildContext(settings, io);
      const pending = await pendingApprovals(context);
      if (settings.json) {
        io.out(
          JSON.stringify({
            pending: pending.map((w) => ({
              id: w.id,
              workspace: w.workspace.name,
              playbook: w.playbook,
              requester: w.requester,
              plan: w.approval.planSummary ?? null,
              createdAt: w.createdAt,
            })),
          }),
        );
        return;
      }
      if (pending.length === 0) io.out('no workflow is waiting for approval');
      for (const w of pending)
        io.out(
          `${w.id}  ${w.workspace.name}  plan ${w.approval.planSummary ?? '?'}  requested by ${w.requester} at ${w.createdAt}`,
        );
    },
  );
}
