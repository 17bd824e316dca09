/**
 * Where each record lives on the ledger branch, and how it is read back:
 * every record is validated on read, and a malformed one is reported with its
 * file and the reason — never repaired or overwritten.
 */
import { z } from 'zod';
import { ExocompError } from '../domain/errors.js';
import { WORKFLOW_SCHEMA_VERSION, workflowSchema, type Workflow } from '../domain/workflow.js';
import type { LedgerSnapshot } from './store.js';

export const LEDGER_PATHS = {
  workflow: (id: string) => `workflows/${id}.json`,
  workflowsDir: 'workflows/',
  inventory: (name: string) => `inventories/${name}.json`,
  inventoryFile: (name: string) => `inventories/${name}.inventory.json`,
  inventoriesDir: 'inventories/',
  knownHosts: 'known_hosts',
  sealed: (name: string) => `sealed/${name}.json`,
  lock: (key: string) => `locks/${key}.json`,
} as const;

export class LedgerRecordError extends ExocompError {
  readonly file: string;
  readonly reason: string;
  constructor(file: string, reason: string) {
    super('ledger-record', `malformed ledger record ${file}: ${reason}`, {
      help: 'nothing was overwritten; inspect the file on the ledger branch (git log -p) and restore it from its history',
    });
    this.name = 'LedgerRecordError';
    this.file = file;
    this.reason = reason;
  }
}

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
    throw new LedgerRecordError(file, `unknown schema version ${JSON.stringify(version)} (this exocomp reads ${schemaVersion})`);
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new LedgerRecordError(file, describeZodIssues(parsed.error));
  return parsed.data;
}

export function serializeRecord(record: unknown): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

export function readWorkflow(snapshot: LedgerSnapshot, id: string): Workflow | undefined {
  const file = LEDGER_PATHS.workflow(id);
  const text = snapshot.read(file);
  if (text === undefined) return undefined;
  return parseRecord(file, text, workflowSchema, WORKFLOW_SCHEMA_VERSION);
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

/** Every workflow on the branch; malformed ones are returned as errors, not dropped. */
export function listWorkflows(snapshot: LedgerSnapshot): { workflows: Workflow[]; errors: LedgerRecordError[] } {
  const workflows: Workflow[] = [];
  const errors: LedgerRecordError[] = [];
  for (const file of snapshot.list(LEDGER_PATHS.workflowsDir)) {
    if (!file.endsWith('.json')) continue;
    try {
      workflows.push(parseRecord(file, snapshot.read(file) ?? '', workflowSchema, WORKFLOW_SCHEMA_VERSION));
    } catch (error) {
      if (error instanceof LedgerRecordError) errors.push(error);
      else throw error;
    }
  }
  workflows.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return { workflows, errors };
}
