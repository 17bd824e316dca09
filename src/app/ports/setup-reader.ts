/**
 * The setup port: reads a CI platform's settings that make the approval gate meaningful (environments,
 * rulesets or protected branches, the job token's push setting, secrets' names, schedules) into the facts
 * src/domain/setup-check.ts judges. GitHub: src/platform/github/setup.ts; GitLab: src/platform/gitlab/setup.ts.
 * A setting the token may not read is `{ unreadable: <what to grant> }`, never a failure.
 */
import type { SetupFacts } from '../../domain/setup-check.js';

export interface SetupReader {
  /** `full`: every row `exocomp doctor` prints; otherwise only what the gate depends on (the jobs' warnings). */
  read(scope: 'full' | 'gate'): Promise<SetupFacts>;
}
