/**
 * A state lock left held (issue 36 item 5): when tofu/terraform cannot take the workspace's state lock it prints the
 * holder's lock info ("Error acquiring the state lock", then `Lock Info:` with ID, Path, Operation, Who, Version,
 * Created, Info — statemgr.LockInfo). A run that was killed inside its apply leaves exactly such a lock; the next run
 * names it, with the command that releases it, instead of a bare tool failure.
 */
import { ExocompError } from './errors.js';

/** The summary tofu and terraform give the diagnostic of a lock they could not take. */
export const LOCK_ERROR_SUMMARY = 'Error acquiring the state lock';

export interface StateLock {
  id: string;
  /** `user@host` of the process that took it. */
  who?: string;
  /** e.g. `OperationTypeApply`. */
  operation?: string;
  created?: string;
}

const FIELDS = { ID: 'id', Who: 'who', Operation: 'operation', Created: 'created' } as const;

/** The lock info in a lock error's text; undefined when it names no lock ID. */
export function parseStateLock(text: string): StateLock | undefined {
  const info = text.split(/^\s*Lock Info:\s*$/m)[1];
  if (info === undefined) return undefined;
  const lock: Partial<Record<(typeof FIELDS)[keyof typeof FIELDS], string>> = {};
  for (const line of info.split('\n')) {
    const match = /^\s*(ID|Who|Operation|Created):\s*(\S.*?)\s*$/.exec(line);
    if (match?.[1] && match[2]) lock[FIELDS[match[1] as keyof typeof FIELDS]] ??= match[2];
  }
  // terraform's http backend prints the lock info of the run that asked, and the holder's ID only in its message.
  const holderId = /already locked: ID=([^\s,]+)/.exec(text)?.[1];
  const id = holderId ?? lock.id;
  // The ID is a UUID (terraform) or a random id: nothing that could be a shell word of its own.
  if (id === undefined || !/^[A-Za-z0-9._:-]+$/.test(id)) return undefined;
  return holderId !== undefined && holderId !== lock.id ? { id } : { ...lock, id };
}

/** The exact command that releases `lock`, for this binary (`terraform`, `tofu`) and workspace directory. */
export function forceUnlockCommand(tool: string, workspaceDir: string, lock: StateLock): string {
  return `${tool} -chdir=${shellWord(workspaceDir)} force-unlock ${lock.id}`;
}

/** The failure of a run that met a held lock: its first line names the lock, its holder and the command. */
export function stateLockedError(tool: string, workspaceDir: string, lock: StateLock): ExocompError {
  const holder = [
    lock.who ? `held by ${lock.who}` : undefined,
    lock.operation ? `for ${lock.operation}` : undefined,
    lock.created ? `since ${lock.created}` : undefined,
  ].filter((part) => part !== undefined);
  const command = forceUnlockCommand(tool, workspaceDir, lock);
  return new ExocompError(
    'tool-failed',
    `the workspace's state is locked (lock ID ${lock.id}${holder.length > 0 ? `, ${holder.join(' ')}` : ''}): once no run holds it, release it with \`${command}\`, then resume`,
    {
      help: `a run killed inside its apply (kill -9, a lost runner) leaves its lock held; check that no ${tool} of that lock's holder still runs, then run \`${command}\``,
      detail: `state lock ${lock.id}`,
    },
  );
}

/** A path as one POSIX shell word: quoted only when it needs it. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./@:+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
