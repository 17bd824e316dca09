/**
 * GitLab's Terraform state API, the part OpenTofu's and Terraform's `http`
 * backend uses, for the GitLab double (issue 36, item 3). Modelled on GitLab's
 * lib/api/terraform/state.rb and Terraform::RemoteStateHandler, and on the
 * http backend's client (internal/backend/remote-state/http/client.go):
 *
 * - `GET  …/terraform/state/:name`: the latest state; 404 when the state does
 *   not exist, 204 when it exists (locked) but has no file yet. The backend
 *   takes both as "no state".
 * - `POST …/terraform/state/:name[?ID=<lock id>]`: a new version of the state,
 *   kept by its serial; 409 when the state is locked and ID is not the lock's;
 *   an empty body is 204 and stores nothing.
 * - `DELETE …/terraform/state/:name[?ID=…]`: removes the state (same lock rule).
 * - `POST …/lock` with the backend's LockInfo as JSON (ID, Operation, Info,
 *   Who, Version, Created, Path, all required): 200 with the lock; 409 with the
 *   lock that holds it (its ID, Who = the GitLab user, Created) when locked.
 * - `DELETE …/lock` with the LockInfo (or nothing, as `force-unlock` sends):
 *   200; 409 when an ID is given and is not the lock's.
 * - `GET …/terraform/state/:name/versions/:serial`: one kept version.
 *
 * Authentication is the double's (basic auth, job token or an `api` token);
 * GitLab's role checks (Developer reads, Maintainer writes) are not modelled.
 */

export interface StateLock {
  ID: string;
  Operation: string;
  Info: string;
  Who: string;
  Version: string;
  Created: string;
  Path: string;
}

interface StoredState {
  /** serial → the state's text as uploaded */
  versions: Map<number, string>;
  latest: string | undefined;
  lock: StateLock | undefined;
}

export interface StateAnswer {
  status: number;
  body?: string;
}

const LOCK_FIELDS = ['ID', 'Operation', 'Info', 'Who', 'Version', 'Created', 'Path'] as const;

/** `/api/v4/projects/:id/terraform/state/:name`, `…/lock`, `…/versions/:serial`. */
export const TERRAFORM_STATE_PATH =
  /^\/api\/v4\/projects\/([^/]+)\/terraform\/state\/([^/]+)(\/lock|\/versions\/(\d+))?$/;

export class TerraformStateApi {
  /** `<project id>/<state name>` → the state. */
  readonly states = new Map<string, StoredState>();

  /** The route name a request to `path` is recorded under, or undefined when it is not this API's. */
  static routeOf(method: string, path: string): string | undefined {
    const match = TERRAFORM_STATE_PATH.exec(path);
    if (!match) return undefined;
    const what = match[4] !== undefined ? 'version' : match[3] === '/lock' ? 'lock' : 'state';
    return `terraform-${what}-${method.toLowerCase()}`;
  }

  /** The lock held on a state, if any. */
  lockOf(projectId: number, name: string): StateLock | undefined {
    return this.states.get(`${projectId}/${name}`)?.lock;
  }

  /** Locks a state as someone else's run would (a test's stuck lock). */
  holdLock(projectId: number, name: string, lock: StateLock): void {
    this.stateFor(`${projectId}/${name}`).lock = lock;
  }

  answer(input: {
    method: string;
    projectId: number;
    path: string;
    query: URLSearchParams;
    body: string;
    username: string;
  }): StateAnswer {
    const match = TERRAFORM_STATE_PATH.exec(input.path);
    if (!match) return { status: 404 };
    const key = `${input.projectId}/${decodeURIComponent(match[2]!)}`;
    const existing = this.states.get(key);
    if (match[4] !== undefined) {
      const version = input.method === 'GET' ? existing?.versions.get(Number(match[4])) : undefined;
      return version === undefined ? { status: 404 } : { status: 200, body: version };
    }
    if (match[3] === '/lock') return this.answerLock(key, input);
    const lockId = input.query.get('ID') ?? undefined;
    switch (input.method) {
      case 'GET':
        if (!existing) return { status: 404 };
        return existing.latest === undefined ? { status: 204 } : { status: 200, body: existing.latest };
      case 'POST': {
        if (input.body === '') return { status: 204 };
        const state = this.stateFor(key);
        if (!lockMatches(state, lockId)) return { status: 409 };
        const serial = (JSON.parse(input.body) as { serial?: unknown }).serial;
        if (typeof serial !== 'number') return { status: 400 };
        state.versions.set(serial, input.body);
        state.latest = input.body;
        return { status: 200 };
      }
      case 'DELETE':
        if (!existing) return { status: 404 };
        if (!lockMatches(existing, lockId)) return { status: 409 };
        this.states.delete(key);
        return { status: 200 };
      default:
        return { status: 405 };
    }
  }

  private answerLock(key: string, input: { method: string; body: string; username: string }): StateAnswer {
    let info: Record<string, unknown> = {};
    try {
      if (input.body.trim() !== '') info = JSON.parse(input.body) as Record<string, unknown>;
    } catch {
      return { status: 400 };
    }
    if (input.method === 'POST') {
      if (LOCK_FIELDS.some((field) => typeof info[field] !== 'string')) return { status: 400 };
      const state = this.stateFor(key);
      if (state.lock) return { status: 409, body: JSON.stringify(state.lock) };
      state.lock = {
        ...(Object.fromEntries(LOCK_FIELDS.map((field) => [field, info[field]])) as unknown as StateLock),
        Who: input.username,
        Created: new Date().toISOString(),
      };
      return { status: 200, body: JSON.stringify(state.lock) };
    }
    if (input.method === 'DELETE') {
      const state = this.states.get(key);
      if (!state) return { status: 404 };
      // `force-unlock` sends no lock: GitLab then unlocks whatever holds the state.
      const id = typeof info.ID === 'string' ? info.ID : undefined;
      if (id !== undefined && state.lock !== undefined && state.lock.ID !== id) return { status: 409 };
      state.lock = undefined;
      return { status: 200 };
    }
    return { status: 405 };
  }

  private stateFor(key: string): StoredState {
    let state = this.states.get(key);
    if (!state) {
      state = { versions: new Map(), latest: undefined, lock: undefined };
      this.states.set(key, state);
    }
    return state;
  }
}

/** GitLab's lock_matches?: an unlocked state takes a write without an ID; a locked one only with its lock's ID. */
function lockMatches(state: StoredState, lockId: string | undefined): boolean {
  if (state.lock === undefined) return lockId === undefined;
  return state.lock.ID === lockId;
}
