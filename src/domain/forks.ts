/**
 * How many hosts a play works on at once (ansible's `forks`), chosen from the
 * number of hosts and the runner's cores (docs/converge.md, "Forks"; ADR 0028-forks).
 *
 * A fork is a Python worker that spends most of a task waiting on its SSH
 * connection, so a few per core keep the runner busy; more only add processes
 * that compete for the same cores (issue 29: 25 forks on one core cost 25 %
 * more CPU than 5, for no gain). Never fewer than ansible's default (a play
 * over many hosts is not slowed below what plain ansible does), never more than
 * the hosts (ansible would not start them), never more than a fixed ceiling.
 */

/** ansible's own default, what every play used before forks were derived. */
export const ANSIBLE_DEFAULT_FORKS = 5;
export const FORKS_PER_CORE = 5;
export const MAX_FORKS = 50;

/**
 * The forks of a play over `hosts` hosts (undefined: not known, as for an
 * inventory file given by the user) on a runner with `cores` cores. A value in
 * `userSetting` (ANSIBLE_FORKS in the play's environment) wins: exocomp then
 * sets nothing, and ansible validates it as it always does.
 */
export function chooseForks(hosts: number | undefined, cores: number, userSetting?: string): number | undefined {
  if (userSetting !== undefined && userSetting.trim() !== '') return undefined;
  const byCores = Math.min(MAX_FORKS, Math.max(ANSIBLE_DEFAULT_FORKS, wholeAtLeastOne(cores) * FORKS_PER_CORE));
  return hosts === undefined ? byCores : Math.min(wholeAtLeastOne(hosts), byCores);
}

function wholeAtLeastOne(value: number): number {
  return Number.isFinite(value) ? Math.max(1, Math.floor(value)) : 1;
}
