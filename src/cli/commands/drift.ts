import { appendFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { convertCron } from '../../domain/cron.js';
import { DRIFT_EXIT_CODES, driftExitCode, driftVerdict } from '../../domain/drift.js';
import { renderDriftMarkdown, renderDriftText } from '../../domain/drift-render.js';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { parseScheduleName } from '../../domain/schedule.js';
import { checkDrift } from '../../app/drift.js';
import { gitlabIssueContext, publishGitLabDriftIssue } from '../../platform/gitlab/drift-issue.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';
import { addKeyOptions, addTofuOptions, readVars, runInputs, workspaceNameFor } from '../run-options.js';

const EXIT_HELP = `exit status: ${DRIFT_EXIT_CODES.clean} no drift, ${DRIFT_EXIT_CODES.failed} the check itself failed, 2 bad usage, ${DRIFT_EXIT_CODES.drift} drift found`;

/** The standing inventory a drift check targets: --inventory tf:<name>, else the workspace's name. */
function inventoryName(workspace: string, options: Record<string, unknown>): string {
  if (typeof options.inventory !== 'string') return workspaceNameFor(workspace, options.workspaceName);
  const ref = parseInventoryRef(options.inventory);
  if (ref.kind !== 'standing') {
    throw new UsageError(`--inventory ${options.inventory} is not a standing inventory`, 'drift checks tf:<name>, the inventory the workspace materializes');
  }
  return ref.name;
}

/** `--schedule-name` and `--schedule-cron` (the five-field CI cron, or the six-field one `schedule add` takes) go together. */
function scheduleOf(options: Record<string, unknown>): { name: string; cron: string } | undefined {
  const { scheduleName, scheduleCron } = options;
  if (scheduleName === undefined && scheduleCron === undefined) return undefined;
  if (typeof scheduleName !== 'string' || typeof scheduleCron !== 'string') {
    throw new UsageError('--schedule-name and --schedule-cron go together', 'pass both to record this run as a tick of that schedule, or neither');
  }
  const fields = scheduleCron.trim().split(/\s+/);
  const cron = fields.length === 5 ? convertCron(`0 ${scheduleCron}`).cron : convertCron(scheduleCron).cron;
  return { name: parseScheduleName(scheduleName), cron };
}

export function registerDrift(program: Command, io: Io): void {
  addLedgerOptions(
    addKeyOptions(
      addTofuOptions(
        program
          .command('drift')
          .description(`report what a plan would change in the workspace and what the configure play would change on its hosts (nothing is applied or pinned); ${EXIT_HELP}`)
          .argument('<workspace>', 'directory of the OpenTofu/Terraform workspace')
          .requiredOption('--playbook <file>', 'the configure playbook, run with --check --diff')
          .addOption(new Option('--inventory <ref>', 'the standing inventory to check (default: tf:<workspace name>)'))
          .addOption(new Option('--remote-user <name>', 'user the check-mode play connects as').default('exocomp'))
          .addOption(new Option('--summary-file <file>', 'append the markdown report to this file (e.g. $GITHUB_STEP_SUMMARY)'))
          .addOption(new Option('--schedule-name <name>', 'record this run as a tick of this schedule (with --schedule-cron)'))
          .addOption(new Option('--schedule-cron <cron>', "the schedule's cron, five fields as CI writes it (or the six-field form)"))
          .addOption(new Option('--gitlab-issue', "inside a GitLab job: open, update or close the project's sticky drift issue (EXOCOMP_GITLAB_TOKEN, api scope)").default(false)),
      ),
    ),
  ).action(async (workspace: string, options: Record<string, unknown>) => {
    // Every input is parsed before the ledger is touched.
    const settings = globalSettings(options);
    const name = inventoryName(workspace, options);
    const schedule = scheduleOf(options);
    const vars = readVars(options.varsFile as string | undefined);
    const context = await buildContext(settings, io);
    const inputs = runInputs(options, context.env, [], io.secrets);
    const gitlab = options.gitlabIssue === true ? gitlabIssueContext(process.env, inputs.secrets) : undefined;
    const info = (message: string) => context.progress.emit({ type: 'info', message: inputs.secrets.redact(message) });
    const report = await checkDrift(context, {
      workspacePath: workspace,
      name,
      playbook: String(options.playbook),
      ...(vars ? { vars } : {}),
      ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
      ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
      runSecrets: inputs.runSecrets,
      ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
      remoteUser: String(options.remoteUser),
      secrets: inputs.secrets,
      ...(schedule ? { schedule } : {}),
      info,
      ...(settings.json ? {} : { onOutput: (line: string) => io.err(line.trimEnd()) }),
    });
    const redact = (text: string) => inputs.secrets.redact(text);
    if (typeof options.summaryFile === 'string') appendFileSync(options.summaryFile, redact(renderDriftMarkdown(report)));
    if (gitlab) {
      const issue = await publishGitLabDriftIssue(gitlab.api, gitlab.project, report, { runUrl: gitlab.runUrl, redact });
      const line = issue.kind === 'refused' ? `notice: ${issue.reason}` : issue.line;
      if (line) io.err(redact(line));
    }
    const exitCode = driftExitCode(report);
    if (settings.json) io.out(redact(JSON.stringify({ result: { verdict: driftVerdict(report), exitCode, report } })));
    else io.out(redact(renderDriftText(report).trimEnd()));
    process.exitCode = exitCode;
  });
}
