/**
 * The artifact port on GitHub: @actions/artifact, imported only by the
 * entries of jobs that move plans (it is large). Downloads always go through
 * the run-scoped REST API (`findBy`), for this run too: a re-run of failed jobs
 * is a new attempt whose runtime token cannot read an earlier attempt's
 * artifacts, and a dispatched continuation reads the plan run's.
 */
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { ArtifactPort } from '../../app/ports/ci-platform.js';
import type { RunContext } from './run-context.js';

/** `token` (needs `actions: read`) reaches the artifacts of an earlier run of the repository. */
export function actionsArtifacts(run: RunContext, token: string, retentionDays: number): ArtifactPort {
  // Loaded on first use: only a job that moves a plan pays for the client.
  const client = async () => new (await import('@actions/artifact')).DefaultArtifactClient();
  return {
    async upload(file) {
      await (
        await client()
      ).uploadArtifact(basename(file), [file], dirname(file), { skipArchive: true, retentionDays });
    },
    async download(name, runId, dir) {
      const findBy = {
        token,
        workflowRunId: runId,
        repositoryOwner: run.repository.owner,
        repositoryName: run.repository.repo,
      };
      const artifacts = await client();
      let id: number;
      try {
        id = (await artifacts.getArtifact(name, { findBy })).artifact.id;
      } catch (error) {
        if ((error as Error).name === 'ArtifactNotFoundError' || statusOf(error) === 404) return undefined;
        if (statusOf(error) === 403 || statusOf(error) === 401) {
          throw new ExocompError(
            'permission',
            `GitHub refused to list the artifacts of run ${runId} (${statusOf(error)}), where the approved plan was made`,
            {
              help: 'grant the job’s token `actions: read` in `permissions:` (naming any permission sets the others to none); nothing was applied',
            },
          );
        }
        throw error;
      }
      // Sealed plans are uploaded unarchived; the file keeps its name.
      await artifacts.downloadArtifact(id, { path: dir, skipDecompress: true, findBy });
      const [file] = await readdir(dir);
      return file === undefined ? undefined : join(dir, file);
    },
  };
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}
