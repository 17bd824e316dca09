/**
 * The typed ledger repository: the only place that knows where a record lives.
 * Everything outside `src/ledger/` reads records through the named readers
 * below and writes them through `RecordWrites`; no other module builds a
 * ledger path. Every record is validated on read, and a malformed one is
 * reported with its file and the reason — never repaired or overwritten.
 * Path components come only from names that pass `checkRecordName`.
 */
import { z } from 'zod';
import { ExocompError } from '../domain/errors.js';
import { parseKnownHosts, renderKnownHosts, type Pin, type PinnedKnownHosts } from '../domain/known-hosts.js';
import { RECORD_NAME_MAX_LENGTH, recordNameProblem } from '../domain/names.js';
import {
  CONVERGE_HISTORY_SCHEMA_VERSION,
  convergeHistorySchema,
  SHARD_RESULT_SCHEMA_VERSION,
  shardResultSchema,
  type ConvergeHistory,
  type ShardResult,
} from '../domain/converge-record.js';
import { ROLLOUT_SCHEMA_VERSION, rolloutRecordSchema, type RolloutRecord } from '../domain/rollout.js';
import { DRIFT_HISTORY_SCHEMA_VERSION, driftHistorySchema, type DriftHistory } from '../domain/drift-history.js';
import { SCHEDULE_FIRES_SCHEMA_VERSION, scheduleFiresSchema, type ScheduleFires } from '../domain/schedule-fires.js';
import { LOCK_SCHEMA_VERSION, lockRecordSchema, type LockRecord } from '../domain/lock.js';
import { PLAN_VIEW_SCHEMA_VERSION, planViewSchema, type PlanView } from '../domain/plan-view.js';
import { PROVENANCE_SCHEMA_VERSION, provenanceRecordSchema, type ProvenanceRecord } from '../domain/provenance.js';
import { SEALED_SCHEMA_VERSION, sealedRecordSchema, type SealedRecord } from '../domain/seal.js';
import { INVENTORY_SCHEMA_VERSION, inventoryRecordSchema, type InventoryRecord } from '../domain/standing-inventory.js';
import { WORKFLOW_SCHEMA_VERSION, workflowSchema, type Workflow } from '../domain/workflow.js';
import { USER_CA_SCHEMA_VERSION, userCaRecordSchema, type UserCaRecord } from '../domain/user-ca.js';
import { LedgerRecordError } from './record-error.js';
import type { LedgerSnapshot } from './store.js';

/** The kinds of named records, as they appear in messages. */
export type RecordKind =
  'workflow' | 'inventory' | 'sealed outputs' | 'lock' | 'drift history' | 'schedule' | 'converge run';

function shardIndex(index: number): number {
  if (!Number.isInteger(index) || index < 1)
    throw new ExocompError('internal', `shard index ${index} is not a positive whole number`);
  return index;
}

// The record-name rule is the domain's (src/domain/names.ts); this module applies it before building any path.
export { recordNameProblem };

/** The last line of defence: a name that reaches the ledger unchecked is refused before any path is built from it. */
export function checkRecordName(kind: RecordKind, name: string): string {
  const problem = recordNameProblem(name);
  if (problem !== undefined) {
    throw new ExocompError('usage', `invalid ${kind} name ${JSON.stringify(name.slice(0, 80))}: ${problem}`, {
      help: `names are lowercase letters, digits, ".", "_" and "-" (at most ${RECORD_NAME_MAX_LENGTH} characters); nothing was written to the ledger`,
    });
  }
  return name;
}

/** Where each record lives. Only src/ledger and tests use it: the rest of the code uses the readers and `RecordWrites`. */
export const LEDGER_PATHS = {
  workflow: (id: string) => `workflows/${checkRecordName('workflow', id)}.json`,
  workflowsDir: 'workflows/',
  inventory: (name: string) => `inventories/${checkRecordName('inventory', name)}.json`,
  inventoryFile: (name: string) => `inventories/${checkRecordName('inventory', name)}.inventory.json`,
  inventoriesDir: 'inventories/',
  knownHosts: 'known_hosts',
  /** The user CA's record: each run's certificate (serial, key id) and the revocations (docs/keys.md "User CA"). */
  userCa: 'user-ca.json',
  sealed: (name: string) => `sealed/${checkRecordName('sealed outputs', name)}.json`,
  lock: (key: string) => `locks/${checkRecordName('lock', key)}.json`,
  driftHistory: (name: string) => `drift/${checkRecordName('drift history', name)}.json`,
  scheduleFires: (name: string) => `schedules/${checkRecordName('schedule', name)}.json`,
  convergeHistory: (name: string) => `converges/${checkRecordName('inventory', name)}/history.json`,
  /** The plan view of the plan a workflow's approval binds (a record of its own: it can be large). */
  planView: (workflowId: string) => `plan-views/${checkRecordName('workflow', workflowId)}.json`,
  /** The provenance statement of a workflow's apply (docs/provenance.md). */
  provenance: (workflowId: string) => `provenance/${checkRecordName('workflow', workflowId)}.json`,
  shardResultsDir: (name: string, runId: string) =>
    `converges/${checkRecordName('inventory', name)}/shards/${checkRecordName('converge run', runId)}/`,
  shardResult: (name: string, runId: string, index: number) =>
    `${LEDGER_PATHS.shardResultsDir(name, runId)}${shardIndex(index)}.json`,
  /** A rolling converge's batches, budget and reports (one record per run: the shards' compare-and-swap point). */
  rollout: (name: string, runId: string) =>
    `converges/${checkRecordName('inventory', name)}/rollouts/${checkRecordName('converge run', runId)}.json`,
} as const;

export { LedgerRecordError };

export function describeZodIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Parses a JSON record and checks its schema version before its shape. */
export function parseRecord<T>(file: string, text: string, schema: z.ZodType<T>, schemaVersion: number): T {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new LedgerRecordError(file, `broken JSON (${(error as Error).message})`);
  }
  const version = (data as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (version !== schemaVersion) {
    throw new LedgerRecordError(
      file,
      `unknown schema version ${JSON.stringify(version)} (this exocomp reads ${schemaVersion})`,
    );
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new LedgerRecordError(file, describeZodIssues(parsed.error));
  return parsed.data;
}

export function serializeRecord(record: unknown): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/**
 * Reads one record and parses it; a record that cannot be used is an error
 * naming its path and the ref it lives on, and makes only itself unreadable.
 */
function readRecord<T>(snapshot: LedgerSnapshot, file: string, parse: (text: string) => T): T | undefined {
  const text = snapshot.read(file);
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof LedgerRecordError) throw error.on(snapshot.refOf?.(file));
    throw error;
  }
}

/** A record whose own name disagrees with its file is not used: it was copied or crafted, not written by exocomp. */
function checkNamedAs(file: string, field: string, actual: string, expected: string): void {
  if (actual !== expected) {
    throw new LedgerRecordError(
      file,
      `its ${field} ${JSON.stringify(actual.slice(0, 80))} differs from its file name (${JSON.stringify(expected)})`,
    );
  }
}

// ---- workflows

function parseWorkflowFile(file: string, text: string, id: string): Workflow {
  const workflow = parseRecord(file, text, workflowSchema, WORKFLOW_SCHEMA_VERSION);
  checkNamedAs(file, 'id', workflow.id, id);
  return workflow;
}

export function readWorkflow(snapshot: LedgerSnapshot, id: string): Workflow | undefined {
  const file = LEDGER_PATHS.workflow(id);
  return readRecord(snapshot, file, (text) => parseWorkflowFile(file, text, id));
}

/** Whether a workflow record exists (well-formed or not), without parsing it. */
export function hasWorkflow(snapshot: LedgerSnapshot, id: string): boolean {
  return snapshot.read(LEDGER_PATHS.workflow(id)) !== undefined;
}

export function requireWorkflow(snapshot: LedgerSnapshot, id: string): Workflow {
  const workflow = readWorkflow(snapshot, id);
  if (!workflow) {
    throw new ExocompError('usage', `no workflow ${id} in the ledger`, {
      help: 'list workflows with `exocomp provision status`, or check --ledger / --ledger-branch',
    });
  }
  return workflow;
}

/** Every workflow in the ledger; malformed ones are returned as errors, not dropped. */
export function listWorkflows(snapshot: LedgerSnapshot): { workflows: Workflow[]; errors: LedgerRecordError[] } {
  const workflows: Workflow[] = [];
  const errors: LedgerRecordError[] = [];
  for (const file of snapshot.list(LEDGER_PATHS.workflowsDir)) {
    const id = /^workflows\/(.+)\.json$/.exec(file)?.[1];
    if (id === undefined) continue;
    try {
      const problem = recordNameProblem(id);
      if (problem !== undefined)
        throw new LedgerRecordError(file, `its file name is not a workflow id: ${problem}`, {
          ref: snapshot.refOf?.(file),
        });
      const workflow = readRecord(snapshot, file, (text) => parseWorkflowFile(file, text, id));
      if (workflow) workflows.push(workflow);
    } catch (error) {
      if (error instanceof LedgerRecordError) errors.push(error);
      else throw error;
    }
  }
  workflows.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return { workflows, errors };
}

// ---- standing inventories

export function readInventoryRecord(snapshot: LedgerSnapshot, name: string): InventoryRecord | undefined {
  const file = LEDGER_PATHS.inventory(name);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, inventoryRecordSchema, INVENTORY_SCHEMA_VERSION);
    checkNamedAs(file, 'name', record.name, name);
    if (record.materialized && record.materialized.file !== LEDGER_PATHS.inventoryFile(name)) {
      throw new LedgerRecordError(
        file,
        `it points at ${JSON.stringify(record.materialized.file.slice(0, 120))} instead of ${LEDGER_PATHS.inventoryFile(name)}`,
      );
    }
    return record;
  });
}

/** Where the materialized inventory of `tf:<name>` is kept, as a path on the ledger (for records and messages). */
export function inventoryFileLocation(name: string): string {
  return LEDGER_PATHS.inventoryFile(name);
}

/** The materialized static inventory text of `tf:<name>`, as written at apply. */
export function readInventoryFile(snapshot: LedgerSnapshot, name: string): string | undefined {
  return snapshot.read(LEDGER_PATHS.inventoryFile(name));
}

/** The materialized inventory texts of every standing inventory, by name. */
export function listInventoryFiles(snapshot: LedgerSnapshot): Map<string, string> {
  const files = new Map<string, string>();
  for (const file of snapshot.list(LEDGER_PATHS.inventoriesDir)) {
    const name = /^inventories\/(.+)\.inventory\.json$/.exec(file)?.[1];
    const text = snapshot.read(file);
    if (name !== undefined && recordNameProblem(name) === undefined && text !== undefined) files.set(name, text);
  }
  return files;
}

// ---- sealed outputs

export function readSealedOutputs(snapshot: LedgerSnapshot, name: string): SealedRecord | undefined {
  const file = LEDGER_PATHS.sealed(name);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, sealedRecordSchema, SEALED_SCHEMA_VERSION);
    checkNamedAs(file, 'workspace', record.workspace, name);
    return record;
  });
}

// ---- pinned host keys

/**
 * The pinned store's text as stored, only to tell whether a write changes it.
 * Never hand it to ssh: readPinnedKnownHosts is the file ssh gets.
 */
export function readKnownHostsText(snapshot: LedgerSnapshot): string {
  return snapshot.read(LEDGER_PATHS.knownHosts) ?? '';
}

/** The pinned host keys; a store with a line that is not an exact pin is malformed (the line is named), not partly used. */
export function readPins(snapshot: LedgerSnapshot): Pin[] {
  const pins = readRecord(snapshot, LEDGER_PATHS.knownHosts, (text) => {
    try {
      return parseKnownHosts(text);
    } catch (error) {
      if (error instanceof ExocompError) throw new LedgerRecordError(LEDGER_PATHS.knownHosts, error.message);
      throw error;
    }
  });
  return pins ?? [];
}

/**
 * The pinned store as the known_hosts file ssh is given: the one reader of
 * every path that hands pins to ssh (plays, converge, drift, preview,
 * onboarding, `host known-hosts`). It is rendered from the validated pins,
 * never the record's own text, so nothing but exact pins reaches ssh.
 */
export function readPinnedKnownHosts(snapshot: LedgerSnapshot): PinnedKnownHosts {
  return renderKnownHosts(readPins(snapshot));
}

// ---- concurrency-key locks

export function readLock(snapshot: LedgerSnapshot, key: string): LockRecord | undefined {
  const file = LEDGER_PATHS.lock(key);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, lockRecordSchema, LOCK_SCHEMA_VERSION);
    checkNamedAs(file, 'key', record.key, key);
    return record;
  });
}

// ---- plan views

/** The view of the plan awaiting (or given) approval; undefined when none was recorded (a plan before issue 27). */
export function readPlanView(snapshot: LedgerSnapshot, workflowId: string): PlanView | undefined {
  const file = LEDGER_PATHS.planView(workflowId);
  const text = snapshot.read(file);
  if (text === undefined) return undefined;
  const view = parseRecord(file, text, planViewSchema, PLAN_VIEW_SCHEMA_VERSION);
  checkNamedAs(file, 'workflowId', view.workflowId, workflowId);
  return view;
}

// ---- provenance

/** The provenance of a workflow's apply; undefined when its apply has not succeeded (or ran before provenance was recorded). */
export function readProvenance(snapshot: LedgerSnapshot, workflowId: string): ProvenanceRecord | undefined {
  const file = LEDGER_PATHS.provenance(workflowId);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, provenanceRecordSchema, PROVENANCE_SCHEMA_VERSION);
    checkNamedAs(file, 'workflowId', record.workflowId, workflowId);
    return record;
  });
}

// ---- drift checks and scheduled runs

export function readDriftHistory(snapshot: LedgerSnapshot, name: string): DriftHistory | undefined {
  const file = LEDGER_PATHS.driftHistory(name);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, driftHistorySchema, DRIFT_HISTORY_SCHEMA_VERSION);
    checkNamedAs(file, 'name', record.name, name);
    return record;
  });
}

/** Every workspace's drift history; malformed records are returned as errors, not dropped. */
export function listDriftHistories(snapshot: LedgerSnapshot): {
  histories: DriftHistory[];
  errors: LedgerRecordError[];
} {
  const histories: DriftHistory[] = [];
  const errors: LedgerRecordError[] = [];
  for (const file of snapshot.list('drift/')) {
    const name = /^drift\/(.+)\.json$/.exec(file)?.[1];
    if (name === undefined || recordNameProblem(name) !== undefined) continue;
    try {
      const history = readDriftHistory(snapshot, name);
      if (history) histories.push(history);
    } catch (error) {
      if (error instanceof LedgerRecordError) errors.push(error);
      else throw error;
    }
  }
  return { histories: histories.sort((a, b) => a.name.localeCompare(b.name)), errors };
}

export function readConvergeHistory(snapshot: LedgerSnapshot, name: string): ConvergeHistory | undefined {
  const file = LEDGER_PATHS.convergeHistory(name);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, convergeHistorySchema, CONVERGE_HISTORY_SCHEMA_VERSION);
    checkNamedAs(file, 'name', record.name, name);
    return record;
  });
}

/** The shard results one converge run recorded so far (a malformed one is an error: the fold must not guess). */
export function readShardResults(snapshot: LedgerSnapshot, name: string, runId: string): ShardResult[] {
  const dir = LEDGER_PATHS.shardResultsDir(name, runId);
  const results: ShardResult[] = [];
  for (const file of snapshot.list(dir)) {
    const index = file.startsWith(dir) ? /^([1-9]\d*)\.json$/.exec(file.slice(dir.length))?.[1] : undefined;
    if (index === undefined) continue;
    const record = readRecord(snapshot, file, (text) => {
      const parsed = parseRecord(file, text, shardResultSchema, SHARD_RESULT_SCHEMA_VERSION);
      checkNamedAs(file, 'shard', String(parsed.shard.index), index);
      checkNamedAs(file, 'run id', parsed.runId, runId);
      return parsed;
    });
    if (record) results.push(record);
  }
  return results;
}

/** A rolling converge's record, or undefined when the run has none (a malformed one is an error: shards must not guess). */
export function readRollout(snapshot: LedgerSnapshot, name: string, runId: string): RolloutRecord | undefined {
  const file = LEDGER_PATHS.rollout(name, runId);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, rolloutRecordSchema, ROLLOUT_SCHEMA_VERSION);
    checkNamedAs(file, 'name', record.name, name);
    checkNamedAs(file, 'run id', record.runId, runId);
    return record;
  });
}

/** Every schedule's recorded fires (malformed records are skipped here: status reports workflows' errors, not these). */
export function listScheduleFires(snapshot: LedgerSnapshot): ScheduleFires[] {
  const found: ScheduleFires[] = [];
  for (const file of snapshot.list('schedules/')) {
    const name = /^schedules\/(.+)\.json$/.exec(file)?.[1];
    if (name === undefined || recordNameProblem(name) !== undefined) continue;
    try {
      const record = readScheduleFires(snapshot, name);
      if (record) found.push(record);
    } catch (error) {
      if (!(error instanceof LedgerRecordError)) throw error;
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

export function readScheduleFires(snapshot: LedgerSnapshot, name: string): ScheduleFires | undefined {
  const file = LEDGER_PATHS.scheduleFires(name);
  return readRecord(snapshot, file, (text) => {
    const record = parseRecord(file, text, scheduleFiresSchema, SCHEDULE_FIRES_SCHEMA_VERSION);
    checkNamedAs(file, 'name', record.name, name);
    return record;
  });
}

// ---- the user CA

export function readUserCaRecord(snapshot: LedgerSnapshot): UserCaRecord | undefined {
  const file = LEDGER_PATHS.userCa;
  return readRecord(snapshot, file, (text) => parseRecord(file, text, userCaRecordSchema, USER_CA_SCHEMA_VERSION));
}

// ---- checking every record

/** How each kind of ledger file is read; `undefined` for files no reader here knows. */
function readerOf(path: string): ((snapshot: LedgerSnapshot) => unknown) | undefined {
  const named = (pattern: RegExp, read: (snapshot: LedgerSnapshot, ...names: string[]) => unknown) => {
    const names = pattern.exec(path)?.slice(1);
    if (names === undefined) return undefined;
    const problem = names.map(recordNameProblem).find((found) => found !== undefined);
    if (problem !== undefined)
      return (snapshot: LedgerSnapshot) => {
        throw new LedgerRecordError(path, `its file name is not a record name: ${problem}`, {
          ref: snapshot.refOf?.(path),
        });
      };
    return (snapshot: LedgerSnapshot) => read(snapshot, ...names);
  };
  if (path === LEDGER_PATHS.knownHosts) return readPins;
  if (path === LEDGER_PATHS.userCa) return readUserCaRecord;
  return (
    named(/^inventories\/(.+)\.inventory\.json$/, (snapshot, name) => readInventoryFile(snapshot, name)) ??
    named(/^workflows\/(.+)\.json$/, (snapshot, id) => readWorkflow(snapshot, id)) ??
    named(/^inventories\/(.+)\.json$/, (snapshot, name) => readInventoryRecord(snapshot, name)) ??
    named(/^sealed\/(.+)\.json$/, (snapshot, name) => readSealedOutputs(snapshot, name)) ??
    named(/^locks\/(.+)\.json$/, (snapshot, key) => readLock(snapshot, key)) ??
    named(/^provenance\/(.+)\.json$/, (snapshot, id) => readProvenance(snapshot, id)) ??
    named(/^drift\/(.+)\.json$/, (snapshot, name) => readDriftHistory(snapshot, name)) ??
    named(/^schedules\/(.+)\.json$/, (snapshot, name) => readScheduleFires(snapshot, name)) ??
    named(/^converges\/([^/]+)\/history\.json$/, (snapshot, name) => readConvergeHistory(snapshot, name)) ??
    named(/^converges\/([^/]+)\/shards\/([^/]+)\/[^/]+$/, (snapshot, name, run) =>
      readShardResults(snapshot, name, run),
    ) ??
    named(/^converges\/([^/]+)\/rollouts\/([^/]+)\.json$/, (snapshot, name, run) => readRollout(snapshot, name, run))
  );
}

/**
 * Reads every file of the ledger as its reader would, and returns each record
 * that cannot be used (one error per file), sorted by path. Reads only.
 */
export function checkRecords(snapshot: LedgerSnapshot): LedgerRecordError[] {
  const problems = new Map<string, LedgerRecordError>();
  for (const path of snapshot.list('')) {
    try {
      const read = readerOf(path);
      if (read === undefined) snapshot.read(path);
      else read(snapshot);
    } catch (error) {
      if (!(error instanceof LedgerRecordError)) throw error;
      problems.set(error.file, error);
    }
  }
  return [...problems.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

// ---- writes

/** Records to write, computed from the ledger as it stands when they are written, and what the commit says of them. */
export type RecordsChange = (snapshot: LedgerSnapshot) => {
  writes: RecordWrites;
  message: string;
  readOthers?: boolean;
};

/**
 * The files one ledger change writes (null deletes), built only through the
 * named methods, so every path comes from a checked name.
 */
export class RecordWrites extends Map<string, string | null> {
  workflow(workflow: Workflow): this {
    return this.set(LEDGER_PATHS.workflow(workflow.id), serializeRecord(workflow));
  }

  inventoryRecord(record: InventoryRecord): this {
    return this.set(LEDGER_PATHS.inventory(record.name), serializeRecord(record));
  }

  inventoryFile(name: string, text: string): this {
    return this.set(LEDGER_PATHS.inventoryFile(name), text);
  }

  sealedOutputs(name: string, record: SealedRecord | null): this {
    return this.set(LEDGER_PATHS.sealed(name), record === null ? null : serializeRecord(record));
  }

  knownHosts(text: string): this {
    return this.set(LEDGER_PATHS.knownHosts, text);
  }

  userCa(record: UserCaRecord): this {
    return this.set(LEDGER_PATHS.userCa, serializeRecord(record));
  }

  driftHistory(record: DriftHistory): this {
    return this.set(LEDGER_PATHS.driftHistory(record.name), serializeRecord(record));
  }

  convergeHistory(record: ConvergeHistory): this {
    return this.set(LEDGER_PATHS.convergeHistory(record.name), serializeRecord(record));
  }

  shardResult(record: ShardResult): this {
    return this.set(LEDGER_PATHS.shardResult(record.name, record.runId, record.shard.index), serializeRecord(record));
  }

  /** Removes a folded shard result (the branch history keeps it). */
  foldedShardResult(record: ShardResult): this {
    return this.set(LEDGER_PATHS.shardResult(record.name, record.runId, record.shard.index), null);
  }

  rollout(record: RolloutRecord): this {
    return this.set(LEDGER_PATHS.rollout(record.name, record.runId), serializeRecord(record));
  }

  /** Removes a folded rollout (the branch history keeps it). */
  foldedRollout(record: RolloutRecord): this {
    return this.set(LEDGER_PATHS.rollout(record.name, record.runId), null);
  }

  planView(view: PlanView): this {
    return this.set(LEDGER_PATHS.planView(view.workflowId), serializeRecord(view));
  }

  provenance(record: ProvenanceRecord): this {
    return this.set(LEDGER_PATHS.provenance(record.workflowId), serializeRecord(record));
  }

  scheduleFires(record: ScheduleFires): this {
    return this.set(LEDGER_PATHS.scheduleFires(record.name), serializeRecord(record));
  }

  lock(key: string, record: LockRecord | null): this {
    return this.set(LEDGER_PATHS.lock(key), record === null ? null : serializeRecord(record));
  }
}
