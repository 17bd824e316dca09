/**
 * The artifact port on GitHub: @actions/artifact, imported only by the
 * entries of jobs that move plans (it is large). Downloads come from this run
 * (the runner's results service), or through the REST API from an earlier run
 * (the dispatched continuation reaches the plan run's artifacts).
 */
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { ArtifactPort } from '../../app/ports/ci-platform.js';
import type { RunContext } from './run-context.js';

/** `token` (needs `actions: read`) reaches the artifacts of an earlier run of the repository. */
export function actionsArtifacts(run: RunContext, token: string): ArtifactPort {
  // Loaded on first use: only a job that moves a plan pays for the client.
  const client = async () => new (await import('@actions/artifact')).DefaultArtifactClient();
  return {
    async upload(file) {
      await (await client()).uploadArtifact(basename(file), [file], dirname(file), { skipArchive: true, retentionDays: 7 });
    },
    async download(name, runId, dir) {
      const other = runId !== run.runId;
      const findBy = other ? { token, workflowRunId: runId, repositoryOwner: run.repository.owner, repositoryName: run.repository.repo } : undefined;
      const artifacts = await client();
      let id: number;
      try {
        id = (await artifacts.getArtifact(name, findBy && { findBy })).artifact.id;
      } catch (error) {
        if ((error as Error).name === 'ArtifactNotFoundError' || statusOf(error) === 404) return undefined;
        if (other && (statusOf(error) === 403 || statusOf(error) === 401)) {
          throw new ExocompError('permission', `GitHub refused to list the artifacts of run ${runId} (${statusOf(error)}), where the approved plan was made`, {
            help: 'grant the job’s token `actions: read` in `permissions:` (naming any permission sets the others to none); nothing was applied',
          });
        }
        throw error;
      }
      // Sealed plans are uploaded unarchived; the file keeps its name.
      await artifacts.downloadArtifact(id, { path: dir, skipDecompress: true, ...(findBy && { findBy }) });
      const [file] = await readdir(dir);
      return file === undefined ? undefined : join(dir, file);
    },
  };
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

