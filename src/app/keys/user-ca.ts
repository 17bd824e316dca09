/**
 * A run's fleet certificate (issue 42, docs/keys.md "User CA"): an ephemeral
 * key made in the run's private directory, signed by the user CA for the fleet
 * user, valid from now to the job's time limit. It is recorded in the ledger
 * (serial, key id, window) before it reaches any host; the private key never
 * leaves the private directory, which goes with the run.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { buildKrl, fingerprintOf, generateKeyPair, publicKeyOf, signUserKey } from '../../adapters/ssh-keys.js';
import { UsageError } from '../../domain/errors.js';
import {
  checkKeyId,
  emptyUserCaRecord,
  krlSpecification,
  parseRevocationTarget,
  serialFrom,
  validityWindow,
  withIssued,
  withRevocation,
  type FleetAuthMode,
  type IssuedCertificate,
  type Revocation,
} from '../../domain/user-ca.js';
import { readUserCaRecord, RecordWrites } from '../../ledger/records.js';
import type { LedgerStore } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';
import type { SecretRegistry } from '../runtime/secrets.js';

/** The user CA a run was given, and how its certificates are made. */
export interface UserCaSigner {
  /** The run's private 0600 copy of the CA key. */
  caKeyPath: string;
  /** Where the ephemeral key is made (the run's private directory). */
  privateDir: string;
  /** How long a certificate lives: the job's time limit, default 1 h. */
  lifetimeMs: number;
  /** CIDR list the certificate may be used from (source-address), when given. */
  sourceAddress?: string | undefined;
  /** The run's secrets: the ephemeral private key joins them the moment it exists. */
  secrets: SecretRegistry;
  /** One certificate per fleet user for the run, issued on first use. */
  issued: Map<string, Promise<FleetCertificate>>;
}

export interface FleetCertificate {
  /** The ephemeral private key; its certificate is beside it as `-cert.pub`, where ssh and ssh-add look. */
  keyPath: string;
  certificate: IssuedCertificate;
}

/**
 * The key file the fleet user logs in with on this run: the certificate's key when the run was given a user CA
 * (issued and recorded once per user), else the fleet key.
 */
export async function fleetCredential(
  store: LedgerStore,
  inputs: { fleetKeyPath?: string | undefined; userCa?: UserCaSigner | undefined },
  request: { user: string; keyId: string },
): Promise<string | undefined> {
  if (inputs.userCa === undefined) return inputs.fleetKeyPath;
  const signer = inputs.userCa;
  let issuing = signer.issued.get(request.user);
  if (issuing === undefined) {
    issuing = issueAndRecord(store, signer, request);
    signer.issued.set(request.user, issuing);
  }
  return (await issuing).keyPath;
}

async function issueAndRecord(
  store: LedgerStore,
  signer: UserCaSigner,
  request: { user: string; keyId: string },
): Promise<FleetCertificate> {
  const keyId = checkKeyId(request.keyId);
  const keyPath = join(signer.privateDir, `fleet-cert-${signer.issued.size}`);
  await generateKeyPair(keyPath, `exocomp run ${keyId}`);
  const privateText = await readFile(keyPath, 'utf8');
  signer.secrets.add(privateText, privateText.trim());
  const validity = validityWindow(Date.now(), signer.lifetimeMs);
  const serial = serialFrom(randomBytes(8));
  await signUserKey({
    caKeyPath: signer.caKeyPath,
    keyPath,
    keyId,
    principal: request.user,
    serial,
    validity,
    sourceAddress: signer.sourceAddress,
  });
  const certificate: IssuedCertificate = {
    serial,
    keyId,
    principal: request.user,
    ...validity,
    caFingerprint: await fingerprintOf(signer.caKeyPath),
    ...(signer.sourceAddress ? { sourceAddress: signer.sourceAddress } : {}),
  };
  // Written ahead: no host sees a certificate the ledger does not list.
  await store.update(
    (snapshot) => ({
      writes: new RecordWrites().userCa(withIssued(readUserCaRecord(snapshot) ?? emptyUserCaRecord(), certificate)),
      message: `user CA: certificate ${serial} (${keyId}) for ${request.user}`,
      result: undefined,
    }),
    { readsOnlyItsWrites: true },
  );
  return { keyPath, certificate };
}

/** The public key lines onboarding installs: the CA's public half (when the mode trusts certificates). */
export async function trustedUserCaKeys(signer: UserCaSigner | undefined, mode: FleetAuthMode): Promise<string[]> {
  if (mode === 'key') return [];
  if (signer === undefined)
    throw new UsageError(
      `--fleet-auth ${mode} needs the user CA key`,
      'pass --user-ca-key <file> (in CI: the user-ca-key input or EXOCOMP_USER_CA_KEY), made by exocomp keys init --user-ca',
    );
  return [await publicKeyOf(signer.caKeyPath)];
}

/**
 * What the onboarding play is told about certificates (playbooks/onboard.yml): the mode, the CA keys a host trusts
 * for the fleet user, and the current KRL (base64) built from the ledger's revocations, installed as RevokedKeys.
 */
export async function certificateTrustVars(
  store: LedgerStore,
  signer: UserCaSigner | undefined,
  mode: FleetAuthMode,
): Promise<Record<string, unknown>> {
  const caKeys = await trustedUserCaKeys(signer, mode);
  if (mode === 'key') return { exocomp_fleet_auth: mode };
  const record = readUserCaRecord(await store.read()) ?? emptyUserCaRecord();
  const dir = await makePrivateDir('krl');
  try {
    const krl = await buildKrl(dir, caKeys, krlSpecification(record.revoked));
    return { exocomp_fleet_auth: mode, exocomp_user_ca_keys: caKeys, exocomp_revoked_keys: krl.toString('base64') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `exocomp keys revoke <serial|key-id>`: adds it to the ledger's revocations; the onboarding builds the KRL from
 * them (for every CA it installs) and installs it as RevokedKeys. Revoking twice changes nothing.
 */
export async function revokeCertificate(
  app: Pick<AppContext, 'store'>,
  target: string,
  now: Date,
): Promise<{ revocation: Revocation; matched: IssuedCertificate[]; added: boolean }> {
  const revocation = parseRevocationTarget(target, now.toISOString());
  return app.store.update((snapshot) => {
    const record = readUserCaRecord(snapshot) ?? emptyUserCaRecord();
    const next = withRevocation(record, revocation);
    const matched = record.issued.filter((c) =>
      'serial' in revocation ? c.serial === revocation.serial : c.keyId === revocation.keyId,
    );
    const added = next !== record;
    return {
      writes: added ? new RecordWrites().userCa(next) : new RecordWrites(),
      message: `user CA: revoke ${'serial' in revocation ? `serial ${revocation.serial}` : `key id ${revocation.keyId}`}`,
      result: { revocation, matched, added },
    };
  });
}
