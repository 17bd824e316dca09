/**
 * The standing inventory `tf:<name>` (docs/architecture.md, "The standing inventory"): a registration record and
 * the materialized inventory file it points at, both on the ledger branch.
 * Resolving one fails closed, with a distinct reason for each way it can be
 * unusable, before any ansible process exists.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ExocompError } from './errors.js';
import {
  deriveHosts,
  parseInventory,
  renderAnsibleInventory,
  type DerivedHost,
  type StaticInventory,
} from './inventory.js';

export const INVENTORY_SCHEMA_VERSION = 1;

export const inventoryRecordSchema = z.object({
  schemaVersion: z.literal(INVENTORY_SCHEMA_VERSION),
  name: z.string(),
  registeredAt: z.string(),
  workspacePath: z.string().optional(),
  /** Absent until an apply materialized the file. */
  materialized: z
    .object({
      file: z.string(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      appliedAt: z.string(),
      workflowId: z.string().optional(),
      runUrl: z.string().optional(),
      source: z.enum(['ansible_inventory', 'fallback']),
      outputCount: z.number().int().nonnegative(),
      hostCount: z.number().int().nonnegative(),
    })
    .optional(),
});
export type InventoryRecord = z.infer<typeof inventoryRecordSchema>;

export type InventoryFailure = 'unregistered' | 'not-materialized' | 'lost' | 'corrupt' | 'no-hosts';

export class InventoryUnusableError extends ExocompError {
  readonly reason: InventoryFailure;
  constructor(reason: InventoryFailure, message: string, help: string) {
    super('inventory', message, { help });
    this.name = 'InventoryUnusableError';
    this.reason = reason;
  }
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Where in an inventory a secret sits, by dotted path (`all.hosts.web1.db_password`), never by value; a secret in a
 * key is named by the mapping that holds it. `exposes` says whether a text holds a secret in any form.
 */
export function secretPlacesIn(inventory: unknown, exposes: (text: string) => boolean): string[] {
  const places: string[] = [];
  const visit = (value: unknown, path: string): void => {
    if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (exposes(key)) places.push(`a key under ${path === '' ? 'the top level' : path}`);
        else visit(inner, path === '' ? key : `${path}.${key}`);
      }
    } else if (exposes(String(value))) places.push(path);
  };
  visit(inventory, '');
  return places;
}

/** The bytes of a materialized inventory file: what ansible reads, and what the hash covers. */
export function renderInventoryFile(inventory: StaticInventory): string {
  return `${JSON.stringify(inventory, null, 2)}\n`;
}

export interface ResolvedInventory {
  name: string;
  record: InventoryRecord;
  /** The exact file text, as stored in the ledger. */
  text: string;
  /** What ansible reads (the run's private copy): every string value unsafe for templating. */
  ansibleText: string;
  inventory: StaticInventory;
  hosts: DerivedHost[];
}

/**
 * Decides whether `tf:<name>` can be run against. `record` is the parsed
 * registration (undefined when there is none) and `fileText` the materialized
 * file's text (undefined when it is missing).
 */
export function resolveStandingInventory(
  name: string,
  record: InventoryRecord | undefined,
  fileText: string | undefined,
): ResolvedInventory {
  const ref = `tf:${name}`;
  if (!record) {
    throw new InventoryUnusableError(
      'unregistered',
      `inventory ${ref} is not registered: no apply of a workspace named ${name} has been recorded in this ledger`,
      `apply the workspace first (exocomp workspace apply <dir> --workspace-name ${name}), or check --ledger / --ledger-branch`,
    );
  }
  const materialized = record.materialized;
  if (!materialized) {
    throw new InventoryUnusableError(
      'not-materialized',
      `inventory ${ref} is registered but not materialized: no apply of it has succeeded yet`,
      `run its apply to completion (exocomp provision status shows the workflow that registered it)`,
    );
  }
  if (fileText === undefined) {
    throw new InventoryUnusableError(
      'lost',
      `inventory ${ref} has lost its file: ${materialized.file} is missing from the ledger`,
      `re-apply the workspace to materialize it again, or restore the file from the ledger branch history`,
    );
  }
  if (sha256(fileText) !== materialized.sha256) {
    throw new InventoryUnusableError(
      'corrupt',
      `inventory ${ref} is corrupt: ${materialized.file} does not match the hash recorded at apply`,
      `re-apply the workspace, or restore the file from the ledger branch history`,
    );
  }
  let inventory: StaticInventory;
  try {
    inventory = parseInventory(JSON.parse(fileText), `inventory ${ref}`);
  } catch (error) {
    throw new InventoryUnusableError(
      'corrupt',
      `inventory ${ref} is corrupt: ${materialized.file} is not a valid static inventory (${(error as Error).message})`,
      `re-apply the workspace, or restore the file from the ledger branch history`,
    );
  }
  const hosts = deriveHosts(inventory);
  if (hosts.length === 0) {
    throw new InventoryUnusableError(
      'no-hosts',
      `inventory ${ref} names no hosts: nothing would be converged, so no play runs`,
      materialized.source === 'fallback'
        ? 'the workspace has no `ansible_inventory` output, so every non-sensitive output became a var of group all and no host was named; add an ansible_inventory output'
        : 'the ansible_inventory output of the last apply names no hosts; check the workspace',
    );
  }
  return { name, record, text: fileText, ansibleText: renderAnsibleInventory(inventory), inventory, hosts };
}
