/**
 * A recurring converge (one that new hosts join by
 * themselves) rendered for the CI: a scheduled GitHub workflow
 * running the `converge` action, or the equivalent GitLab job and the settings of
 * its pipeline schedule. Pure, and byte-stable: the same spec always renders the
 * same bytes, so nothing about the file changes when the hosts do.
 */
import { KEY_VARIABLES } from './key-variables.js';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { convertCron } from './cron.js';
import { UsageError } from './errors.js';
import { parseInventoryRef, quoteValue, STANDING_INVENTORY_PREFIX } from './names.js';
import { parseConcurrencyKey } from './lock.js';
import { checkShardSpec } from './shard.js';

export const SCHEDULE_NAME_MAX_LENGTH = 64;
const SCHEDULE_NAME = /^[a-z0-9][a-z0-9-]*$/;
export const SCHEDULE_FILE_PREFIX = 'exocomp-';
export const DEFAULT_WORKFLOWS_DIR = '.github/workflows';

/** The action versions a generated workflow pins (one place, so the files stay stable). */
export const CONVERGE_ACTION = 'exocomp/provision/actions/converge@v1';
export const DRIFT_ACTION = 'exocomp/provision/actions/drift@v1';
export const SETUP_ACTION = 'exocomp/provision/actions/setup@v1';
// Third-party actions by commit, their version in a comment: a tag can be moved under jobs that hold the fleet key.
export const CHECKOUT_ACTION = 'actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1';
export const SETUP_OPENTOFU_ACTION = 'opentofu/setup-opentofu@a1320f892987e89d278cc92dc5adc984fb93aca4';
const CHECKOUT_STEP = `      - uses: ${CHECKOUT_ACTION} # v7.0.1`;
const SETUP_OPENTOFU_STEP = `      - uses: ${SETUP_OPENTOFU_ACTION} # v2.0.2`;
export const GITLAB_SCHEDULE_VARIABLE = 'EXOCOMP_SCHEDULE';

export interface ScheduleSpec {
  name: string;
  /** The six-field cron as the user wrote it (seconds first). */
  cron: string;
  /** `tf:<name>`: schedules only ever target a standing inventory. */
  target: string;
  concurrencyKey: string;
  playbook: string;
  /** Normalised passthrough flags: `--check`, `--limit L`, `--tags T`. */
  args: string[];
  ledgerBranch: string;
  /** Split the converge over this many matrix jobs (GitHub), each holding the lease `<key>/<i>`, then fold. */
  shards?: number | undefined;
  /** At most this many shard jobs at once (`strategy.max-parallel`). */
  maxParallel?: number | undefined;
  /** `drift`: the schedule runs the drift check of `workspace` instead of a converge. */
  kind?: 'play' | 'drift';
  /** With kind drift: the workspace directory, planned by the check. */
  workspace?: string | undefined;
}

export function scheduleFileName(name: string): string {
  return `${SCHEDULE_FILE_PREFIX}${name}.yml`;
}

export function parseScheduleName(raw: string): string {
  if (raw.length === 0 || raw.length > SCHEDULE_NAME_MAX_LENGTH || !SCHEDULE_NAME.test(raw)) {
    throw new UsageError(
      `invalid schedule name ${quoteValue(raw)}`,
      `a schedule name is 1-${SCHEDULE_NAME_MAX_LENGTH} characters of a-z, 0-9 and '-', starting with a letter or digit (it names .github/workflows/exocomp-<name>.yml)`,
    );
  }
  return raw;
}

/** A value that will sit in a workflow file: one line, and nothing GitHub would evaluate. */
function checkEmbeddable(what: string, value: string): string {
  if (value.length === 0) throw new UsageError(`the ${what} is empty`);
  if (/[\r\n\0]/.test(value))
    throw new UsageError(`the ${what} ${quoteValue(value)} contains a line break`, 'give it on one line');
  if (value.includes('${{')) {
    throw new UsageError(
      `the ${what} ${quoteValue(value)} contains "\${{"`,
      'GitHub would evaluate it as an expression in the generated workflow; remove it',
    );
  }
  return value;
}

const PASSTHROUGH_HELP =
  'after -- give the playbook, then only --check, --limit <pattern> and --tags <tags> (a schedule carries nothing else)';

/**
 * Reads `<playbook> [--check] [--limit L] [--tags T]` (also `--limit=L`), each flag
 * at most once, into the playbook and normalised arguments in a fixed order.
 */
export function parsePassthrough(words: readonly string[]): { playbook: string; args: string[] } {
  const [playbook, ...rest] = words;
  if (playbook === undefined || playbook.startsWith('-')) {
    throw new UsageError('no playbook given for the schedule', PASSTHROUGH_HELP);
  }
  let check = false;
  const values: { limit?: string; tags?: string } = {};
  for (let i = 0; i < rest.length; i += 1) {
    const word = rest[i] as string;
    if (word === '--check') {
      if (check) throw new UsageError('--check is given twice', PASSTHROUGH_HELP);
      check = true;
      continue;
    }
    const flag = /^--(limit|tags)(?:=(.*))?$/.exec(word);
    if (!flag) throw new UsageError(`the schedule cannot carry ${quoteValue(word)}`, PASSTHROUGH_HELP);
    const option = flag[1] as 'limit' | 'tags';
    let value = flag[2];
    if (value === undefined) {
      value = rest[i + 1];
      i += 1;
    }
    if (value === undefined || value === '' || value.startsWith('--'))
      throw new UsageError(`--${option} needs a value`, PASSTHROUGH_HELP);
    if (values[option] !== undefined) throw new UsageError(`--${option} is given twice`, PASSTHROUGH_HELP);
    values[option] = checkEmbeddable(`--${option} value`, value);
  }
  const args = [
    ...(check ? ['--check'] : []),
    ...(values.limit ? ['--limit', values.limit] : []),
    ...(values.tags ? ['--tags', values.tags] : []),
  ];
  return { playbook: checkEmbeddable('playbook path', playbook), args };
}

/** Validates every field and converts the cron; throws a UsageError naming the first problem. */
export function validateScheduleSpec(spec: ScheduleSpec): { spec: ScheduleSpec; fiveFieldCron: string } {
  parseScheduleName(spec.name);
  const ref = parseInventoryRef(spec.target);
  if (ref.kind !== 'standing') {
    throw new UsageError(
      `--target ${quoteValue(spec.target)} is not a standing inventory`,
      'a schedule targets tf:<workspace name>, whose hosts every apply refreshes',
    );
  }
  parseConcurrencyKey(spec.concurrencyKey);
  checkEmbeddable('ledger branch', spec.ledgerBranch);
  if (spec.kind === 'drift') {
    if (spec.workspace === undefined)
      throw new UsageError('--kind drift needs --workspace <dir>', 'the drift check plans that workspace');
    checkEmbeddable('workspace directory', spec.workspace);
    if (spec.args.length > 0)
      throw new UsageError(
        '--kind drift takes the playbook only',
        'the drift check always runs it with --check --diff against the whole inventory',
      );
    if (spec.shards !== undefined) throw new UsageError('--shards splits a converge, not a drift check');
  }
  if (spec.shards !== undefined) checkShardSpec(1, spec.shards);
  if (spec.maxParallel !== undefined) {
    if (spec.shards === undefined)
      throw new UsageError('--max-parallel needs --shards', 'give --shards N to split the converge into N jobs');
    if (!Number.isInteger(spec.maxParallel) || spec.maxParallel < 1 || spec.maxParallel > spec.shards) {
      throw new UsageError(
        `--max-parallel ${spec.maxParallel} is not a whole number from 1 to ${spec.shards} (the shard count)`,
      );
    }
  }
  const { playbook, args } = parsePassthrough([spec.playbook, ...spec.args]);
  if (args.join('\0') !== spec.args.join('\0')) {
    throw new UsageError('the schedule arguments are not in normal form', PASSTHROUGH_HELP);
  }
  return { spec: { ...spec, playbook }, fiveFieldCron: convertCron(spec.cron).cron };
}

/** A YAML single-quoted scalar: no escapes but '' for ', so the bytes are predictable. */
function yamlQuote(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** The generated `.github/workflows/exocomp-<name>.yml`. */
export function renderGitHubSchedule(input: ScheduleSpec): string {
  const { spec, fiveFieldCron } = validateScheduleSpec(input);
  const lines = [
    `# Generated by \`exocomp schedule add ${spec.name}\`: a recurring converge of ${spec.target}.`,
    '# Do not edit by hand. To change it, run `exocomp schedule add` again with --force (or',
    `# \`exocomp schedule remove ${spec.name}\`), then commit the file: GITHUB_TOKEN cannot push workflows.`,
    `# Six-field cron given: ${spec.cron.trim().split(/\s+/).join(' ')} (schedules run in UTC, on the default branch).`,
    `name: ${yamlQuote(`exocomp ${spec.kind === 'drift' ? 'drift' : 'converge'} ${spec.name}`)}`,
    'on:',
    '  schedule:',
    `    - cron: ${yamlQuote(fiveFieldCron)}`,
    '  workflow_dispatch:',
    'concurrency:',
    `  group: ${yamlQuote(spec.concurrencyKey)}`,
    '  cancel-in-progress: false',
    // Naming one key sets every other to none: the converge reads the ledger branch and records its lease there.
    'permissions:',
    '  contents: write',
    ...(spec.kind === 'drift' ? ['  issues: write'] : []),
    'jobs:',
    ...(spec.kind === 'drift'
      ? driftJob(spec)
      : spec.shards === undefined
        ? convergeJob(spec)
        : shardedConvergeJobs(spec, spec.shards)),
  ];
  return `${lines.join('\n')}\n`;
}

function convergeStep(spec: ScheduleSpec, extra: string[]): string[] {
  return [
    `      - uses: ${CONVERGE_ACTION}`,
    '        with:',
    `          target: ${yamlQuote(spec.target)}`,
    `          playbook: ${yamlQuote(spec.playbook)}`,
    ...(spec.args.length > 0 ? ['          args: |', ...spec.args.map((arg) => `            ${arg}`)] : []),
    ...extra,
    `          fleet-private-key: \${{ secrets.${KEY_VARIABLES.fleet} }}`,
    `          seal-key: \${{ secrets.${KEY_VARIABLES.seal} }}`,
    `          ledger-branch: ${yamlQuote(spec.ledgerBranch)}`,
  ];
}

/** The drift check: its report in the summary, the sticky drift issue, the run and its tick in the ledger. */
function driftJob(spec: ScheduleSpec): string[] {
  return [
    '  drift:',
    '    runs-on: ubuntu-latest',
    '    steps:',
    CHECKOUT_STEP,
    // The check plans the workspace: it needs tofu (without the wrapper, whose output exocomp does not parse).
    SETUP_OPENTOFU_STEP,
    '        with:',
    '          tofu_wrapper: false',
    `      - uses: ${SETUP_ACTION}`,
    `      - uses: ${DRIFT_ACTION}`,
    '        with:',
    `          workspace: ${yamlQuote(spec.workspace ?? '.')}`,
    `          target: ${yamlQuote(spec.target)}`,
    `          playbook: ${yamlQuote(spec.playbook)}`,
    `          schedule-name: ${yamlQuote(spec.name)}`,
    `          fleet-private-key: \${{ secrets.${KEY_VARIABLES.fleet} }}`,
    `          seal-key: \${{ secrets.${KEY_VARIABLES.seal} }}`,
    `          ledger-branch: ${yamlQuote(spec.ledgerBranch)}`,
  ];
}

function convergeJob(spec: ScheduleSpec): string[] {
  return [
    '  converge:',
    '    runs-on: ubuntu-latest',
    '    steps:',
    CHECKOUT_STEP,
    `      - uses: ${SETUP_ACTION}`,
    // A converge runs no tofu: setup must not fail for want of one.
    '        with:',
    '          require-tofu: "false"',
    ...convergeStep(spec, [
      `          concurrency-key: ${yamlQuote(spec.concurrencyKey)}`,
      `          schedule-name: ${yamlQuote(spec.name)}`,
    ]),
  ];
}

/**
 * One matrix job per shard, each in its own concurrency group `<key>/<i>` (its
 * lease: a shard never overlaps the same shard of an earlier run), then a fold
 * job that runs even when a shard failed and records one converge result.
 */
function shardedConvergeJobs(spec: ScheduleSpec, shards: number): string[] {
  const indexes = Array.from({ length: shards }, (_, i) => i + 1);
  // shardLease's `<key>/<i>`, with the matrix filling in i.
  const group = `${spec.concurrencyKey}/\${{ matrix.shard }}`;
  return [
    '  converge:',
    '    runs-on: ubuntu-latest',
    '    strategy:',
    '      fail-fast: false',
    ...(spec.maxParallel !== undefined ? [`      max-parallel: ${spec.maxParallel}`] : []),
    '      matrix:',
    `        shard: [${indexes.join(', ')}]`,
    '    concurrency:',
    `      group: ${yamlQuote(group)}`,
    '      cancel-in-progress: false',
    '    steps:',
    CHECKOUT_STEP,
    `      - uses: ${SETUP_ACTION}`,
    // A converge runs no tofu: setup must not fail for want of one.
    '        with:',
    '          require-tofu: "false"',
    ...convergeStep(spec, [`          shard: '\${{ matrix.shard }}/${shards}'`]),
    '  fold:',
    '    needs: converge',
    '    if: ${{ !cancelled() }}',
    '    runs-on: ubuntu-latest',
    '    steps:',
    `      - uses: ${CONVERGE_ACTION}`,
    '        with:',
    `          target: ${yamlQuote(spec.target)}`,
    `          playbook: ${yamlQuote(spec.playbook)}`,
    `          fold-shards: '${shards}'`,
    // The fold records the schedule's fire, once for the whole matrix.
    `          schedule-name: ${yamlQuote(spec.name)}`,
    `          ledger-branch: ${yamlQuote(spec.ledgerBranch)}`,
  ];
}

export const GITLAB_DIR = '.gitlab';
/** The templates as CI/CD components of this project; `--gitlab-template` may name a local copy instead. */
export const GITLAB_CONVERGE_COMPONENT = '$CI_SERVER_FQDN/exocomp/provision/converge@1';
export const GITLAB_DRIFT_COMPONENT = '$CI_SERVER_FQDN/exocomp/provision/drift@1';

/** The description a generated pipeline schedule carries; `schedule list/remove --gitlab` find schedules by it. */
export function gitlabScheduleDescription(name: string): string {
  return `exocomp ${name}`;
}

/** The schedule name of a pipeline schedule this tool created, from its description; undefined for any other. */
export function scheduleNameOfDescription(description: string): string | undefined {
  const match = /^exocomp ([a-z0-9][a-z0-9-]*)$/.exec(description);
  return match && (match[1] as string).length <= SCHEDULE_NAME_MAX_LENGTH ? match[1] : undefined;
}

/**
 * What a generated include carries beside the schedule, so the drift and converge jobs run where the
 * provision include runs: the template to include, the job image, the ledger's project, and (drift only, as
 * only the drift check plans) the state backend.
 */
export interface GitLabIncludeOptions {
  /** The template to include; default: the component for the schedule's kind. */
  template?: string | undefined;
  /** `gitlab`: the project's GitLab-managed OpenTofu state (the provision include's `state: gitlab`). */
  state?: 'local' | 'gitlab' | undefined;
  image?: string | undefined;
  /** group/project holding the ledger branch; absent for the schedule's own project. */
  ledgerProject?: string | undefined;
}

/** The inputs every template takes the same way: image, ledger project (the branch is in the spec). */
function gitlabSharedInputs(include: GitLabIncludeOptions): string[] {
  const image = include.image === undefined ? undefined : checkEmbeddable('image', include.image);
  const project =
    include.ledgerProject === undefined ? undefined : checkEmbeddable('ledger project', include.ledgerProject);
  return [
    ...(project ? [`      ledger-project: ${yamlQuote(project)}`] : []),
    ...(image ? [`      image: ${yamlQuote(image)}`] : []),
  ];
}

/** The `include:` entry: a component reference, or a `.yml` path in the project (`local:`). */
function includeEntry(template: string): string {
  checkEmbeddable('GitLab template', template);
  return template.endsWith('.yml') || template.endsWith('.yaml')
    ? `  - local: ${yamlQuote(template)}`
    : `  - component: ${yamlQuote(template)}`;
}

/** The inputs of templates/converge.yml for a converge schedule (shards: its `parallel: N` jobs and the fold job). */
function gitlabConvergeInputs(spec: ScheduleSpec, fiveFieldCron: string): string[] {
  const limit = spec.args.indexOf('--limit');
  const tags = spec.args.indexOf('--tags');
  return [
    `      target: ${yamlQuote(spec.target)}`,
    `      playbook: ${yamlQuote(spec.playbook)}`,
    ...(spec.args.includes('--check') ? ['      check: true'] : []),
    ...(limit >= 0 ? [`      limit: ${yamlQuote(spec.args[limit + 1] as string)}`] : []),
    ...(tags >= 0 ? [`      tags: ${yamlQuote(spec.args[tags + 1] as string)}`] : []),
    ...(spec.shards !== undefined && spec.shards > 1 ? [`      shards: ${spec.shards}`] : []),
    `      concurrency-key: ${yamlQuote(spec.concurrencyKey)}`,
    `      cron: ${yamlQuote(fiveFieldCron)}`,
  ];
}

/** The inputs of templates/drift.yml: the workspace it plans, tf:<name> it checks, the cron it records ticks of. */
function gitlabDriftInputs(spec: ScheduleSpec, fiveFieldCron: string): string[] {
  return [
    `      workspace: ${yamlQuote(spec.workspace ?? '.')}`,
    // validateScheduleSpec has checked that the target is tf:<name>.
    `      workspace-name: ${yamlQuote(spec.target.slice(STANDING_INVENTORY_PREFIX.length))}`,
    `      playbook: ${yamlQuote(spec.playbook)}`,
    `      cron: ${yamlQuote(fiveFieldCron)}`,
    `      concurrency-key: ${yamlQuote(spec.concurrencyKey)}`,
  ];
}

/**
 * `.gitlab/exocomp-<name>.yml`: includes the converge template (or, for kind
 * drift, the drift template) with this schedule's inputs; the job it defines runs
 * only when the pipeline schedule whose EXOCOMP_SCHEDULE is `<name>` fires. Plus
 * the schedule's settings, for those who create it by hand.
 */
export function renderGitLabSchedule(
  input: ScheduleSpec,
  include: GitLabIncludeOptions = {},
): { file: string; settings: string } {
  const { spec, fiveFieldCron } = validateScheduleSpec(input);
  const { template } = include;
  if (include.state !== undefined && spec.kind !== 'drift') {
    throw new UsageError(
      '--state concerns the drift check (it plans the workspace); a converge reads the standing inventory from the ledger',
      'drop --state for --kind play',
    );
  }
  if (spec.maxParallel !== undefined) {
    throw new UsageError(
      '--max-parallel is a GitHub matrix setting',
      'on GitLab every shard job runs as soon as a runner takes it; limit them with the runners you give the project',
    );
  }
  const drift = spec.kind === 'drift';
  const what = drift
    ? `a recurring drift check of ${spec.target}`
    : `a recurring converge of ${spec.target}${spec.shards && spec.shards > 1 ? ` in ${spec.shards} shards` : ''}`;
  const file = [
    `# Generated by \`exocomp schedule add ${spec.name} --gitlab\`: ${what}.`,
    `# Include it from .gitlab-ci.yml (include: - local: ${GITLAB_DIR}/${scheduleFileName(spec.name)}). Its job runs only`,
    `# when the pipeline schedule with ${GITLAB_SCHEDULE_VARIABLE} = ${spec.name} fires (\`exocomp schedule add --gitlab --create\`).`,
    'include:',
    includeEntry(template ?? (drift ? GITLAB_DRIFT_COMPONENT : GITLAB_CONVERGE_COMPONENT)),
    '    inputs:',
    `      name: ${yamlQuote(spec.name)}`,
    ...(drift ? gitlabDriftInputs(spec, fiveFieldCron) : gitlabConvergeInputs(spec, fiveFieldCron)),
    ...(drift && include.state !== undefined ? [`      state: ${yamlQuote(include.state)}`] : []),
    `      ledger-branch: ${yamlQuote(spec.ledgerBranch)}`,
    ...gitlabSharedInputs(include),
  ].join('\n');
  const settings = [
    'Pipeline schedule (Build → Pipeline schedules → New schedule, or `exocomp schedule add … --gitlab --create`):',
    `  Description:       ${gitlabScheduleDescription(spec.name)}`,
    `  Interval pattern:  ${fiveFieldCron}`,
    '  Cron timezone:     UTC',
    '  Target branch:     the default branch',
    `  Variable:          ${GITLAB_SCHEDULE_VARIABLE} = ${spec.name}`,
    'CI/CD variables (Settings → CI/CD → Variables; masked, protected):',
    `  ${KEY_VARIABLES.fleet}  type File (or a masked Variable): the fleet private key`,
    `  ${KEY_VARIABLES.seal}   the seal key, as a File or a masked Variable (unseals the workspace outputs for the play)`,
    ...(drift ? ['  EXOCOMP_GITLAB_TOKEN  a project access token with the api scope: the sticky drift issue'] : []),
  ].join('\n');
  return { file: `${file}\n`, settings: `${settings}\n` };
}

/**
 * GitLab does not fire a schedule at every cron match: GitLab.com's Free tier
 * runs a project's schedule at most once an hour, and every instance at most as
 * often as its pipeline_schedule_worker_cron (a fire waits for the next worker
 * run). Says so when the cron asks for more than one fire an hour.
 */
export function describeGitLabIntervalWarning(fiveField: string): string | undefined {
  const minute = fiveField.trim().split(/\s+/)[0] ?? '';
  if (/^\d+$/.test(minute)) return undefined;
  return (
    `schedule ${quoteValue(fiveField)} fires more than once an hour: GitLab.com Free runs a pipeline schedule at most hourly, ` +
    'and a self-managed instance at most as often as its pipeline_schedule_worker_cron; fires in between are skipped'
  );
}

/** What `schedule list` shows of a generated workflow file, read back from the file itself; `cron` is the file's five fields. */
export type ScheduleSummary = Omit<ScheduleSpec, 'ledgerBranch'>;

const workflowShape = z.object({
  on: z.object({ schedule: z.array(z.object({ cron: z.string() })).min(1) }),
  concurrency: z.object({ group: z.string() }),
  jobs: z.record(
    z.string(),
    z.object({
      steps: z.array(z.object({ uses: z.string().optional(), with: z.record(z.string(), z.unknown()).optional() })),
    }),
  ),
});

/** Reads a generated workflow back; throws a UsageError saying what is missing when the file is not one. */
export function readGitHubSchedule(name: string, text: string): ScheduleSummary {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    throw new UsageError(`${scheduleFileName(name)} is not valid YAML (${(error as Error).message.split('\n')[0]})`);
  }
  const parsed = workflowShape.safeParse(data);
  if (!parsed.success)
    throw new UsageError(`${scheduleFileName(name)} is not a workflow generated by exocomp schedule add`);
  const step = Object.values(parsed.data.jobs)
    .flatMap((job) => job.steps)
    .find((s) => s.uses === CONVERGE_ACTION || s.uses === DRIFT_ACTION);
  const inputs = step?.with ?? {};
  const inputText = (key: string) => {
    const value = inputs[key];
    return typeof value === 'string' ? value : '';
  };
  if (!step) throw new UsageError(`${scheduleFileName(name)} has no ${CONVERGE_ACTION} step`);
  return {
    name,
    cron: (parsed.data.on.schedule[0] as { cron: string }).cron,
    target: inputText('target'),
    concurrencyKey: parsed.data.concurrency.group,
    playbook: inputText('playbook'),
    args: inputText('args')
      .split('\n')
      .filter((line) => line !== ''),
  };
}
