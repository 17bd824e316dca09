/**
 * The setup check's use cases: `exocomp doctor` (every row) and the warnings the approve and plan jobs print
 * when a protection the gate depends on is off (issue 27). Both read through the same port and judge with the
 * same domain code; the warnings never fail a job (docs/architecture.md, "optional integrations").
 */
import { gateWarnings, judgeSetup, type SetupRow } from '../../domain/setup-check.js';
import type { CiLog } from '../ports/ci-platform.js';
import type { SetupReader } from '../ports/setup-reader.js';
import { optionalCall } from '../runtime/optional-call.js';
import type { SecretRegistry } from '../runtime/secrets.js';

export async function checkSetup(reader: SetupReader, now: Date): Promise<SetupRow[]> {
  return judgeSetup(await reader.read('full'), now);
}

/** One warning per gate row that is not ok; a row the token may not read is a notice naming what to grant. */
export async function warnAboutGateSetup(
  reader: SetupReader,
  log: Pick<CiLog, 'notice' | 'warning'>,
  secrets: SecretRegistry,
  now: Date,
): Promise<SetupRow[]> {
  const rows = await optionalCall(
    log,
    secrets,
    { skipped: 'Could not check the protections the approval relies on', grant: undefined },
    async () => gateWarnings(judgeSetup(await reader.read('gate'), now)),
  );
  for (const row of rows ?? []) {
    const line = `${row.subject}: ${row.detail}. ${row.status === 'unreadable' ? 'To check it' : 'Fix'}: ${row.help}`;
    if (row.status === 'unreadable') log.notice(`Setup check: ${line}`);
    else log.warning(`The approval gate is weaker than it looks (${row.status}) — ${line}`);
  }
  return rows ?? [];
}
