import { appendFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { z } from 'zod';
import { DRIFT_EXIT_CODES } from '../../domain/drift.js';
import { renderDriftMarkdown, renderDriftText } from '../../domain/drift-render.js';
import { driftTarget, runDriftCheck } from '../../app/drift/drift-job.js';
import { playInputs } from '../../app/plays/run-inputs.js';
import { gitlabJobDriftIssue } from '../../platform/gitlab/drift-issue.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';
import {
  addKeyOptions,
  addScheduleOptions,
  addTofuOptions,
  playReporting,
  readVars,
  runInputs,
  scheduleTickOf,
  gitlabJobOption,
} from '../run-options.js';

const EXIT_HELP = `exit status: ${DRIFT_EXIT_CODES.clean} no drift, ${DRIFT_EXIT_CODES.failed} the check itself failed, 2 bad usage, ${DRIFT_EXIT_CODES.drift} drift found`;

const driftOptions = z.object({
  playbook: z.string(),
  inventory: z.string().optional(),
  workspaceName: z.string().optional(),
  varsFile: z.string().optional(),
  remoteUser: z.string(),
  summaryFile: z.string().optional(),
  scheduleName: z.string().optional(),
  scheduleCron: z.string().optional(),
  gitlabIssue: z.boolean(),
  gitlabJob: z.boolean(),
});

export function registerDrift(program: Command, io: Io): void {
  addLedgerOptions(
    addKeyOptions(
      addTofuOptions(
        addScheduleOptions(program.command('drift'))
          .description(
            `report what a plan would change in the workspace and what the configure play would change on its hosts (nothing is applied or pinned); ${EXIT_HELP}`,
          )
          .argument('<workspace>', 'directory of the OpenTofu/Terraform workspace')
          .requiredOption('--playbook <file>', 'the configure playbook, run with --check --diff')
          .addOption(new Option('--inventory <ref>', 'the standing inventory to check (default: tf:<workspace name>)'))
          .addOption(new Option('--remote-user <name>', 'user the check-mode play connects as').default('exocomp'))
          .addOption(
            new Option('--summary-file <file>', 'append the markdown report to this file (e.g. $GITHUB_STEP_SUMMARY)'),
          )
          .addOption(
            new Option(
              '--gitlab-issue',
              "inside a GitLab job: open, update or close the project's sticky drift issue (EXOCOMP_GITLAB_TOKEN, api scope)",
            ).default(false),
          )
          .addOption(gitlabJobOption()),
      ),
    ),
  ).action(async (workspace: string, raw: Record<string, unknown>) => {
    // Every input is parsed before the ledger is touched.
    const settings = globalSettings(raw);
    const o = parseOptions(driftOptions, raw);
    const target = driftTarget({
      workspacePath: workspace,
      workspaceName: o.workspaceName,
      target: o.inventory,
      schedule: scheduleTickOf(o),
      targetName: '--inventory',
    });
    const vars = readVars(o.varsFile);
    const context = await buildContext(settings, io);
    const inputs = await runInputs(raw, context.env, [], io, o.gitlabJob);
    const issue = o.gitlabIssue ? gitlabJobDriftIssue(process.env, inputs.secrets) : undefined;
    // --json prints the report alone: the play's events go to a job's log only (--gitlab-job).
    const { onOutput, onEvent, ...reporting } = playReporting(context, inputs.secrets, settings.json, io, o.gitlabJob);
    const result = await runDriftCheck(context, target, {
      workspacePath: workspace,
      playbook: o.playbook,
      ...(vars ? { vars } : {}),
      ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
      ...playInputs(inputs),
      remoteUser: o.remoteUser,
      issue,
      ...(onOutput ? { onOutput } : {}),
      ...(o.gitlabJob && onEvent ? { onEvent } : {}),
      ...reporting,
    });
    const redact = (text: string) => inputs.secrets.redact(text);
    if (o.summaryFile !== undefined) appendFileSync(o.summaryFile, redact(renderDriftMarkdown(result.report)));
    const issueLine = result.issue?.kind === 'refused' ? `notice: ${result.issue.reason}` : result.issue?.line;
    if (issueLine) io.err(redact(issueLine));
    if (settings.json)
      io.out(
        redact(
          JSON.stringify({ result: { verdict: result.verdict, exitCode: result.exitCode, report: result.report } }),
        ),
      );
    else io.out(redact(renderDriftText(result.report).trimEnd()));
    process.exitCode = result.exitCode;
  });
}
