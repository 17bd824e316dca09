import { Option, type Command } from 'commander';
import { z } from 'zod';
import { parseWorkflowId } from '../../domain/names.js';
import type { ProvenanceCheck, ProvenanceRecord } from '../../domain/provenance.js';
import { showProvenance, verifyWorkflowProvenance } from '../../app/provision/provenance.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

const verifyOptions = z.object({ tofuBinary: z.string().min(1).optional() });

function attestationLine(record: ProvenanceRecord): string {
  const attestation = record.attestation;
  if (attestation === undefined) return 'attestation: not asked';
  if (attestation.outcome === 'attested')
    return `attestation: made ${attestation.at}${attestation.id ? ` (id ${attestation.id})` : ''}`;
  if (attestation.outcome === 'failed') return `attestation: failed ${attestation.at}: ${attestation.reason}`;
  return `attestation: not made: ${attestation.reason}`;
}

function checkLine(check: ProvenanceCheck): string {
  return `${check.ok ? 'ok     ' : 'DIFFERS'}  ${check.part}: ${check.detail}`;
}

export function registerProvenance(program: Command, io: Io): void {
  const provenance = program
    .command('provenance')
    .description("the in-toto statement (SLSA provenance) recorded for a workflow's apply");

  addLedgerOptions(
    provenance
      .command('show')
      .description('print the provenance statement of a workflow (in-toto Statement v1, SLSA provenance v1)')
      .argument('<workflow>', 'workflow id'),
  ).action(async (id: string, options: Record<string, unknown>) => {
    parseWorkflowId(id);
    const settings = globalSettings(options);
    const record = await showProvenance(await buildContext(settings, io), id);
    if (settings.json) io.out(JSON.stringify(record));
    else {
      io.out(JSON.stringify(record.statement, null, 2));
      io.out(attestationLine(record));
    }
  });

  addLedgerOptions(
    provenance
      .command('verify')
      .description(
        "check a workflow's provenance against the ledger (workflow, approval) and the workspace's current state; exit 1 naming what differs",
      )
      .argument('<workflow>', 'workflow id')
      .addOption(
        new Option('--tofu-binary <path>', 'OpenTofu/Terraform binary (default: tofu, else terraform, on PATH)'),
      ),
  ).action(async (id: string, options: Record<string, unknown>) => {
    parseWorkflowId(id);
    const o = parseOptions(verifyOptions, options);
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const secrets = io.secrets ?? new SecretRegistry();
    const verdict = await verifyWorkflowProvenance(context, id, {
      ...(o.tofuBinary ? { tofuBinary: o.tofuBinary } : {}),
      secrets,
      // tofu's own lines go to stderr: stdout holds the verdict (its JSON with --json).
      info: (line) => io.err(line),
    });
    const differs = verdict.checks.filter((check) => !check.ok);
    if (settings.json) io.out(JSON.stringify({ workflow: id, ok: verdict.ok, checks: verdict.checks }));
    else {
      for (const check of verdict.checks) io.out(checkLine(check));
      if (verdict.ok) io.out(`provenance of ${id} verifies`);
    }
    if (!verdict.ok) {
      io.err(
        `provenance of ${id} does not verify: ${differs.map((check) => check.part).join(', ')} differ${differs.length === 1 ? 's' : ''}`,
      );
      process.exitCode = 1;
    }
  });
}
