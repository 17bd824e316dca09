import type { Command } from 'commander';
import { applyWorkspace } from '../../app/provision/apply-workspace.js';
import { Option } from 'commander';
import { z } from 'zod';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';
import {
  addApplyOptions,
  allowDestroyOption,
  protectOption,
  readVars,
  runInputs,
  workspaceNameFor,
} from '../run-options.js';

const applyOptions = z.object({ workspaceName: z.string().optional(), varsFile: z.string().optional() });

export function registerWorkspace(program: Command, io: Io): void {
  const workspace = program.command('workspace').description('apply workspaces outside a provision chain');
  addLedgerOptions(
    addApplyOptions(
      workspace
        .command('apply')
        .description(
          'plan and apply a workspace, then refresh its standing inventory tf:<name> and seal its sensitive outputs',
        )
        .argument('<workspace>', 'directory of the OpenTofu/Terraform workspace')
        .addOption(new Option('--seal-key <value>', 'key that seals sensitive outputs (default: $EXOCOMP_SEAL_KEY)'))
        .addOption(allowDestroyOption())
        .addOption(protectOption()),
    ),
  ).action(async (dir: string, options: Record<string, unknown>) => {
    const settings = globalSettings(options);
    const o = parseOptions(applyOptions, options);
    const name = workspaceNameFor(dir, o.workspaceName);
    const vars = readVars(o.varsFile);
    const context = await buildContext(settings, io);
    const inputs = await runInputs(options, context.env, [], io);
    const info = (message: string) => context.progress.emit({ type: 'info', message });
    const warn = (message: string) => context.progress.emit({ type: 'warning', message });
    const outcome = await applyWorkspace(context, {
      workspacePath: dir,
      name,
      ...(vars ? { vars } : {}),
      ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
      ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
      ...(inputs.allowLocalState ? { allowLocalState: true } : {}),
      guard: { allowDestroy: inputs.allowDestroy ?? false, protect: inputs.protect ?? [] },
      secrets: inputs.secrets,
      info,
      warn,
    });
    if (settings.json) io.out(JSON.stringify({ result: { inventory: `tf:${name}`, ...outcome } }));
    else io.out(outcome.eventLine);
  });
}
