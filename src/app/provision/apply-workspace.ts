/**
 * Applies a workspace and refreshes its standing inventory (docs/architecture.md,
 * "The chain", "The standing inventory", "Secrets"). Used by the chain's apply step and by `exocomp workspace apply`.
 */
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import {
  captureEventLine,
  captureInventory,
  deriveHosts,
  knownHostsName,
  parseInventory,
  type StaticInventory,
} from '../../domain/inventory.js';
import { renderKnownHosts } from '../../domain/known-hosts.js';
import {
  planFingerprint,
  planHasChanges,
  sensitiveStringsInPlan,
  summarizePlan,
  type PlanJson,
  type PlanSummary,
} from '../../domain/plan.js';
import { buildPlanView } from '../../domain/plan-view.js';
import type { StateIdentity } from '../../domain/provenance.js';
import { sealOutputs } from '../../domain/seal.js';
import { redactDiagnostic, relativeToRepository } from '../../domain/tofu-diagnostics.js';
import { isCiEnvironment, isConfigFile, judgeStateBackend, stateBackendOf } from '../../domain/state-backend.js';
import {
  INVENTORY_SCHEMA_VERSION,
  renderInventoryFile,
  secretPlacesIn,
  resolveStandingInventory,
  sha256,
  type InventoryRecord,
  type ResolvedInventory,
} from '../../domain/standing-inventory.js';
import { locateTofu, TofuDriver, type PlanResult, type TofuOutputs, type TofuPort } from '../../adapters/tofu.js';
import {
  inventoryFileLocation,
  listInventoryFiles,
  readInventoryFile,
  readInventoryRecord,
  readKnownHostsText,
  readPins,
  readSealedOutputs,
  RecordWrites,
  type RecordsChange,
} from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { LookAhead } from './look-ahead.js';
import { standingHostsOf, viewAndGuardPlan } from '../approval/plan-view.js';
import type { RunGuard } from '../../domain/destroy-policy.js';

export interface ApplyRequest {
  workspacePath: string;
  name: string;
  vars?: Record<string, unknown>;
  tofuBinary?: string | undefined;
  sealKey?: string | undefined;
  secrets: SecretRegistry;
  workflowId?: string;
  runUrl?: string;
  /** Fingerprint recorded at approval: the applied plan must match it. */
  approvedFingerprint?: string;
  /** Apply exactly this saved plan (the approved plan brought from the plan job) instead of planning again. */
  savedPlanFile?: string;
  /** In CI, apply a workspace whose state stays on the runner (warned, not refused). */
  allowLocalState?: boolean;
  info(message: string): void;
  warn(message: string): void;
  /** Stops tofu when aborted; nothing is recorded after that and the apply rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The caller commits the capture (`ApplyOutcome.capture`), with its own change in one commit; nothing is written here. */
  deferCapture?: boolean;
  /** The plan, made before the apply was recorded as running (lookAheadToApply); only for an apply no approval binds. */
  planned?: LookAhead<PlannedApply> | undefined;
  /** Read the state's lineage and serial after the apply (`ApplyOutcome.state`), for its provenance. */
  identifyState?: boolean;
  /**
   * The destroy guard's run settings (domain/destroy-policy.ts), judged on the plan before it is applied. An approved
   * plan passed the guard before it could be approved: its destroys were admitted then, its protected addresses are
   * judged again against the policy as it stands now.
   */
  guard: RunGuard;
}

export interface ApplyOutcome {
  eventLine: string;
  /** The capture, still to be written, when the request deferred it. */
  capture?: RecordsChange;
  /** tf:<name> as the deferred capture writes it, resolved as a play would (its errors included); the same hosts before the write as after it. */
  inventory?: () => ResolvedInventory;
  outputCount: number;
  hostCount: number;
  applied: boolean;
  summary: PlanSummary;
  /** planFingerprint of the plan that was applied (or, without changes, read). */
  planDigest: string;
  /** The state the apply left, when the request asked to identify it (undefined: the workspace has no state). */
  state?: StateIdentity | undefined;
}

export function formatPlanSummary(summary: PlanSummary): string {
  return `+${summary.add} ~${summary.change} -${summary.destroy}`;
}

export async function requireWorkspaceDir(workspacePath: string, cwd: string): Promise<string> {
  const dir = resolve(cwd, workspacePath);
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new ExocompError('usage', `workspace directory ${JSON.stringify(workspacePath)} does not exist`, {
      help: 'pass the directory that holds the OpenTofu/Terraform configuration',
    });
  }
  return dir;
}

/**
 * Refuses, in CI, a workspace whose state would stay on the runner (no remote
 * backend) unless allowed; returns the warning to show when it was allowed.
 */
export async function checkStateBackend(
  app: AppContext,
  workspacePath: string,
  allowLocalState: boolean,
): Promise<string | undefined> {
  const dir = await requireWorkspaceDir(workspacePath, app.cwd);
  const names = (await readdir(dir)).filter(isConfigFile);
  const files = await Promise.all(
    names.map(async (name) => ({ name, text: await readFile(join(dir, name), 'utf8').catch(() => '') })),
  );
  const verdict = judgeStateBackend(stateBackendOf(files), workspacePath, {
    ci: isCiEnvironment(app.env),
    allowLocalState,
  });
  if (verdict.verdict === 'refuse') throw new ExocompError('usage', verdict.message, { help: verdict.help });
  return verdict.verdict === 'warn' ? verdict.message : undefined;
}

export async function openTofu(
  app: AppContext,
  request: Pick<ApplyRequest, 'workspacePath' | 'tofuBinary' | 'secrets' | 'info' | 'signal'>,
): Promise<TofuPort> {
  const workspaceDir = await requireWorkspaceDir(request.workspacePath, app.cwd);
  const binary = await locateTofu({ tofuBinary: request.tofuBinary, env: app.env });
  return new TofuDriver({
    binary,
    workspaceDir,
    env: tofuEnvironment(app.env),
    secrets: request.secrets.list(),
    onOutput: (line) => {
      const text = line.trimEnd();
      if (text.trim().length > 0) request.info(request.secrets.redact(text));
    },
    // Its lines are shown by onOutput; the faces also place it on its file and line (annotation, code-quality report).
    onDiagnostic: (diagnostic) =>
      app.progress.emit({
        type: 'tofu-diagnostic',
        diagnostic: relativeToRepository(
          redactDiagnostic(diagnostic, (text) => request.secrets.redact(text)),
          relative(app.cwd, workspaceDir),
        ),
      }),
    signal: request.signal,
  });
}

/** tofu keeps the caller's cloud credentials (it needs them) but never the seal key. */
function tofuEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const next = { ...env };
  delete next.EXOCOMP_SEAL_KEY;
  return next;
}

/**
 * The plan sequence every path shares: vars, `init`, `validate`, `plan -out`
 * (with `-detailed-exitcode` for a drift check, where "changes" is an answer).
 */
export async function planWorkspace(
  tofu: TofuPort,
  vars: Record<string, unknown> | undefined,
  planFile: string,
  options: { detailed?: boolean } = {},
): Promise<PlanResult> {
  await prepareWorkspace(tofu, vars);
  return options.detailed ? tofu.planDetailed(planFile) : tofu.plan(planFile);
}

async function prepareWorkspace(tofu: TofuPort, vars: Record<string, unknown> | undefined): Promise<void> {
  if (vars && Object.keys(vars).length > 0) await tofu.writeVars(vars);
  await tofu.init();
  await tofu.validate();
}

/** The plan of an apply no approval binds, made before the apply (see planToApply). */
export interface PlannedApply {
  planFile: string;
  /** `plan -detailed-exitcode` said the plan changes something. */
  changes: boolean;
  /** The plan read back (`show -json`), for the destroy guard, its summary and digest. */
  plan: PlanJson;
  /** The private directory holding the plan file: removed by whoever applies or discards the plan. */
  scratch: string;
}

type PlanToApplyRequest = Pick<
  ApplyRequest,
  'workspacePath' | 'vars' | 'tofuBinary' | 'allowLocalState' | 'secrets' | 'info' | 'warn' | 'signal'
>;

/**
 * The state-backend check, vars, `init`, `validate`, `plan
 * -detailed-exitcode` and `show -json` of an apply no approval binds. Nothing here changes
 * infrastructure or the ledger, so it may run before the apply is recorded as
 * running (lookAheadToApply).
 */
export async function planToApply(app: AppContext, request: PlanToApplyRequest): Promise<PlannedApply> {
  const { tofu, scratch } = await openForPlan(app, request);
  try {
    const planFile = join(scratch, 'exocomp.tfplan');
    await prepareWorkspace(tofu, request.vars);
    // A plan without changes is the resume of an apply that already happened: nothing to apply again.
    const { plan, changes } = await tofu.planDetailed(planFile);
    // The tofu that applies it is another driver: it learns the plan's sensitive values from the run's registry.
    request.secrets.add(...sensitiveStringsInPlan(plan));
    return { planFile, scratch, changes, plan };
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }
}

/** The state-backend check (its warning said), then tofu on the workspace and a private directory for the plan file. */
async function openForPlan(app: AppContext, request: PlanToApplyRequest): Promise<{ tofu: TofuPort; scratch: string }> {
  const localState = await checkStateBackend(app, request.workspacePath, request.allowLocalState ?? false);
  if (localState) request.warn(localState);
  return { tofu: await openTofu(app, request), scratch: await makePrivateDir('plan') };
}

/** planToApply, started now beside the ledger write that records the apply as running; the apply step takes it. */
export function lookAheadToApply(
  app: AppContext,
  request: Omit<PlanToApplyRequest, 'info' | 'warn' | 'signal'>,
): LookAhead<PlannedApply> {
  return new LookAhead(
    (say, signal) => planToApply(app, { ...request, info: say.info, warn: say.warn, signal }),
    (planned) => rm(planned.scratch, { recursive: true, force: true }),
    app.interrupt,
  );
}

export async function applyWorkspace(app: AppContext, request: ApplyRequest): Promise<ApplyOutcome> {
  if (request.savedPlanFile === undefined && request.approvedFingerprint === undefined) {
    // Nothing about this plan has to allow the apply, so it may have been made before the apply was recorded as running.
    const planned = request.planned ? await request.planned.take(request) : await planToApply(app, request);
    try {
      request.signal?.throwIfAborted();
      const tofu = await openTofu(app, request);
      return await finishApply(app, request, tofu, await applyPlanned(app, tofu, request, planned));
    } finally {
      await rm(planned.scratch, { recursive: true, force: true });
    }
  }
  const { tofu, scratch } = await openForPlan(app, request);
  try {
    return await finishApply(
      app,
      request,
      tofu,
      await applyApprovedPlan(app, tofu, request, request.savedPlanFile ?? join(scratch, 'exocomp.tfplan')),
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** After the apply: the outputs, their sensitive values registered as secrets, and the capture of tf:<name> (written here unless deferred). */
async function finishApply(
  app: AppContext,
  request: ApplyRequest,
  tofu: TofuPort,
  { applied, summary, planDigest, approvedPlan }: AppliedPlan,
): Promise<ApplyOutcome> {
  if (!applied) request.info('no changes: the workspace already matches its configuration');
  const [outputs, state] = await Promise.all([
    tofu.outputs(),
    request.identifyState ? tofu.stateIdentity() : Promise.resolve(undefined),
  ]);
  for (const output of Object.values(outputs)) {
    if (output.sensitive) registerSensitive(request.secrets, output.value);
  }
  const { eventLine, outputCount, hostCount, capture, inventory } = captureApply(app, request, outputs, approvedPlan);
  if (!request.deferCapture) {
    await app.store.update((snapshot) => {
      // A runner that lost its step records nothing, not even a capture it finished.
      request.signal?.throwIfAborted();
      return { ...capture(snapshot), result: undefined };
    });
  }
  request.info(eventLine);
  return {
    eventLine,
    outputCount,
    hostCount,
    applied,
    summary,
    planDigest,
    ...(request.identifyState ? { state } : {}),
    ...(request.deferCapture ? { capture, inventory } : {}),
  };
}

/** What applying a plan found: whether it changed anything, its summary and digest, and the approved plan itself. */
interface AppliedPlan {
  applied: boolean;
  summary: PlanSummary;
  planDigest: string;
  approvedPlan?: PlanJson;
}

/** The plan, once the destroy guard let it through, is applied; a plan without changes is only read. */
async function applyPlanned(
  app: AppContext,
  tofu: TofuPort,
  request: ApplyRequest,
  planned: PlannedApply,
): Promise<AppliedPlan> {
  const { plan } = planned;
  const summary = summarizePlan(plan);
  const planDigest = planFingerprint(plan);
  request.info(`plan: ${formatPlanSummary(summary)}`);
  if (planned.changes) {
    await guardApply(app, request, { plan, fingerprint: planDigest }, request.guard);
    await tofu.apply(planned.planFile);
  }
  return { applied: planned.changes, summary, planDigest };
}

/** The approved plan (planned again here, or the saved plan carried from the plan job) is applied only if it is the one approved. */
async function applyApprovedPlan(
  app: AppContext,
  tofu: TofuPort,
  request: ApplyRequest,
  planFile: string,
): Promise<AppliedPlan & { approvedPlan: PlanJson }> {
  const plan =
    request.savedPlanFile === undefined
      ? await planWorkspace(tofu, request.vars, planFile)
      : await readSavedPlan(tofu, planFile);
  const summary = summarizePlan(plan.plan);
  request.info(`plan: ${formatPlanSummary(summary)}`);
  if (request.approvedFingerprint !== undefined && plan.fingerprint !== request.approvedFingerprint) {
    throw new ExocompError(
      'approval',
      'plan changed since approval: the plan now differs from the one that was approved',
      {
        help: 'nothing was applied; start a new workflow so the current plan is reviewed',
      },
    );
  }
  const applied = planHasChanges(plan.plan);
  if (applied) {
    // Its destroys were admitted before it could be approved; a protected address is refused whatever the approval.
    await guardApply(app, request, plan, { ...request.guard, allowDestroy: true });
    await tofu.apply(planFile);
  }
  return { applied, summary, planDigest: plan.fingerprint, approvedPlan: plan.plan };
}

/** The destroy guard on a plan about to be applied: every path that applies a plan passes here first. */
async function guardApply(
  app: AppContext,
  request: ApplyRequest,
  plan: { plan: PlanJson; fingerprint: string },
  guard: RunGuard,
): Promise<void> {
  await viewAndGuardPlan(app, { workspace: request.name, workflowId: request.workflowId ?? request.name }, plan, {
    ...guard,
    workspaceDir: await requireWorkspaceDir(request.workspacePath, app.cwd),
    stage: 'apply',
  });
}

/** A plan saved by an earlier job: the workspace is initialised (providers) and the plan read back. */
async function readSavedPlan(tofu: TofuPort, planFile: string): Promise<{ plan: PlanJson; fingerprint: string }> {
  await tofu.init();
  const plan = await tofu.showPlan(planFile);
  return { plan, fingerprint: planFingerprint(plan) };
}

function registerSensitive(secrets: SecretRegistry, value: unknown): void {
  if (typeof value === 'string') secrets.add(value);
  else if (typeof value === 'number' || typeof value === 'boolean') secrets.add(String(value));
  else if (Array.isArray(value)) value.forEach((v) => registerSensitive(secrets, v));
  else if (value && typeof value === 'object') {
    secrets.add(JSON.stringify(value));
    Object.values(value).forEach((v) => registerSensitive(secrets, v));
  }
}

/** Names (as known_hosts spells them) of the SSH hosts an inventory file names; empty when unreadable. */
function pinNamesOf(text: string | undefined): Set<string> {
  if (text === undefined) return new Set();
  try {
    return new Set(
      deriveHosts(parseInventory(JSON.parse(text)))
        .filter((h) => !h.local)
        .map((h) => knownHostsName(h.address, h.port)),
    );
  } catch {
    return new Set();
  }
}

/**
 * The standing inventory is stored in clear and read back by every later job: a secret this run knows (a key, a
 * run-secret, the seal key, a sensitive output copied with nonsensitive()) must never reach it. Refused here, naming
 * where it sits, before anything is written; the ledger's guard would store it redacted, and the inventory would then
 * no longer match the digest its apply recorded.
 */
function refuseSecretsIn(inventory: StaticInventory, inventoryText: string, secrets: SecretRegistry): void {
  if (!secrets.exposes(inventoryText)) return;
  const places = secretPlacesIn(inventory, (text) => secrets.exposes(text));
  throw new ExocompError(
    'inventory',
    `the ansible_inventory output carries a secret value at ${places.length > 0 ? places.join(', ') : 'the inventory'}: the standing inventory is stored in the ledger in clear, so it was not recorded`,
    {
      help: 'keep secrets out of ansible_inventory: mark the output holding the secret sensitive (with a seal key it reaches the play as an environment variable), or pass it as a run-secret (docs/converge.md); then resume the workflow',
    },
  );
}

/**
 * What an apply records, in one commit: the materialized inventory, its
 * registration, the sealed outputs, and the retirement of pins for hosts this
 * apply dropped (unless another standing inventory still names them).
 */
function captureApply(app: AppContext, request: ApplyRequest, outputs: TofuOutputs, approvedPlan?: PlanJson) {
  const captured = captureInventory(outputs);
  const text = renderInventoryFile(captured.inventory);
  refuseSecretsIn(captured.inventory, text, request.secrets);
  const file = inventoryFileLocation(request.name);
  const eventLine = captureEventLine(
    captured.outputCount,
    `tf:${request.name} (${app.ledgerBranch}:${file})`,
    captured.hostCount,
  );
  const sensitiveCount = Object.values(outputs).filter((o) => o.sensitive).length;
  const sealed =
    sensitiveCount > 0 && request.sealKey !== undefined
      ? sealOutputs({ workspace: request.name, outputs, key: request.sealKey, now: app.now() })
      : undefined;
  if (sensitiveCount > 0 && !sealed) {
    request.warn(
      `${sensitiveCount} sensitive output(s) dropped: no seal key (set EXOCOMP_SEAL_KEY or --seal-key to hand them to plays)`,
    );
  }
  const now = app.now().toISOString();
  const recordFor = (registeredAt: string): InventoryRecord => ({
    schemaVersion: INVENTORY_SCHEMA_VERSION,
    name: request.name,
    registeredAt,
    workspacePath: request.workspacePath,
    materialized: {
      file,
      sha256: sha256(text),
      appliedAt: now,
      source: captured.source,
      outputCount: captured.outputCount,
      hostCount: captured.hostCount,
      ...(request.workflowId ? { workflowId: request.workflowId } : {}),
      ...(request.runUrl ? { runUrl: request.runUrl } : {}),
    },
  });
  // The record as last built for the write: once the write landed, tf:<name> is exactly it and `text`.
  let written: InventoryRecord | undefined;
  const capture: RecordsChange = (snapshot) => {
    const record = (written = recordFor(readInventoryRecord(snapshot, request.name)?.registeredAt ?? now));
    const writes = new RecordWrites().inventoryRecord(record).inventoryFile(request.name, text);
    if (sealed) writes.sealedOutputs(request.name, sealed);
    else if (sensitiveCount === 0 && readSealedOutputs(snapshot, request.name) !== undefined)
      writes.sealedOutputs(request.name, null);
    // Hosts this apply dropped: only then are the other inventories and the pins read.
    const after = pinNamesOf(text);
    const dropped = [...pinNamesOf(readInventoryFile(snapshot, request.name))].filter((pin) => !after.has(pin));
    const retired = retiredPins(snapshot, request.name, dropped);
    // The approval showed the reviewer these hosts replaced, their pins retired: they are onboarded again with new keys.
    if (approvedPlan) for (const pin of replacedHostPins(snapshot, request, approvedPlan)) retired.add(pin);
    if (retired.size > 0 && readKnownHostsText(snapshot) !== '') {
      const kept = readPins(snapshot).filter((pin) => !retired.has(pin.name));
      writes.knownHosts(renderKnownHosts(kept));
    }
    const retiredNote = retired.size > 0 ? `; retire pins ${[...retired].sort().join(', ')}` : '';
    return {
      writes,
      message: `tf:${request.name}: capture ${captured.outputCount} output(s) naming ${captured.hostCount} host(s)${retiredNote}`,
      ...(dropped.length > 0 ? { readOthers: true } : {}),
    };
  };
  // Before the write (the wait for the banners starts beside it), the record it will make: only its registration date may differ.
  const inventory = () => resolveStandingInventory(request.name, written ?? recordFor(now), text);
  return { eventLine, outputCount: captured.outputCount, hostCount: captured.hostCount, capture, inventory };
}

/** The pins of the hosts an approved plan replaced, as its plan view named them (domain/plan-view.ts). */
function replacedHostPins(snapshot: LedgerSnapshot, request: ApplyRequest, plan: PlanJson): string[] {
  const view = buildPlanView({
    plan,
    fingerprint: request.approvedFingerprint ?? '',
    workflowId: request.workflowId ?? request.name,
    workspace: request.name,
    currentHosts: standingHostsOf(snapshot, request.name),
  });
  return view.hosts.filter((h) => h.fate === 'replaced').flatMap((h) => h.pinsRetired);
}

/** The dropped pins no other standing inventory still names. */
function retiredPins(snapshot: LedgerSnapshot, name: string, dropped: readonly string[]): Set<string> {
  const retired = new Set(dropped);
  if (retired.size === 0) return retired;
  for (const [other, text] of listInventoryFiles(snapshot)) {
    if (other === name) continue;
    for (const pin of pinNamesOf(text)) retired.delete(pin);
  }
  return retired;
}
