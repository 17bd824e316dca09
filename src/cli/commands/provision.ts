import type { Command } from 'commander';
import { renderText, viewWorkflow } from '../../domain/render.js';
import { listWorkflows, requireWorkflow } from '../../ledger/records.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';

export function registerProvision(program: Command, io: Io): void {
  const provision = program.command('provision').description('run, follow and resume the provision chain');

  addLedgerOptions(
    provision
      .command('status')
      .description('show a workflow from the ledger (all workflows when no id is given)')
      .argument('[id]', 'workflow id'),
  ).action(async (id: string | undefined, options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const snapshot = await context.store.read();
    const now = context.now();
    if (id !== undefined) {
      const view = viewWorkflow(requireWorkflow(snapshot, id), now);
      io.out(settings.json ? JSON.stringify(view) : renderText(view));
      return;
    }
    const { workflows, errors } = listWorkflows(snapshot);
    if (settings.json) {
      io.out(JSON.stringify({ workflows: workflows.map((w) => viewWorkflow(w, now)), errors: errors.map((e) => ({ file: e.file, reason: e.reason })) }));
    } else {
      if (workflows.length === 0) io.out(`no workflows in ${context.store.description}`);
      for (const w of workflows) io.out(`${w.id}  ${w.state.padEnd(17)} ${w.workspace.name}  ${w.playbook}  ${w.createdAt}`);
      for (const e of errors) io.err(e.message);
    }
    if (errors.length > 0) process.exitCode = 1;
  });
}
