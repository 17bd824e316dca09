/**
 * Hosts named in one line of output, at fleet size: the count and the first
 * few names. Every name still reaches the JSON events and the ledger's failure
 * context; a line a person reads stays one line at 2,000 hosts.
 */

/** Names shown on a summary line at most. */
export const MAX_NAMES_SHOWN = 10;

/** "a, b, c" up to `max` names, then "… and N more". */
export function someNames(names: readonly string[], max = MAX_NAMES_SHOWN): string {
  const shown = names.slice(0, Math.max(1, max));
  const rest = names.length - shown.length;
  return rest > 0 ? `${shown.join(', ')} and ${rest} more` : shown.join(', ');
}

/** "300 host(s): a, b, … and 290 more". */
export function countedNames(names: readonly string[], max = MAX_NAMES_SHOWN): string {
  return `${names.length} host(s): ${someNames(names, max)}`;
}
