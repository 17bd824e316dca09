/**
 * What a key file given as --fleet-key / --bootstrap-key (or the actions' key
 * inputs) must be: an unencrypted private key ssh can use without asking, in a
 * file only its owner can read. Checked from the text and the mode alone, so a
 * bad key is refused before the ledger is written or any process started.
 * Messages never quote the key.
 */

export interface KeyProblem {
  problem: string;
  help: string;
}

const AGENT_HELP =
  'decrypt a copy for the run (ssh-keygen -p -N "" -f <copy>), or load the key into an ssh-agent and export it without a passphrase from a secret store; exocomp never prompts for a passphrase';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/;
const PUBLIC_KEY_LINE = /^(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+AAAA/;
const OPENSSH_MAGIC = 'openssh-key-v1\0';

/** Reads the cipher name of an OpenSSH private key body (base64), or undefined when it is not one. */
function openSshCipher(body: string): string | undefined {
  const bytes = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  if (bytes.length < OPENSSH_MAGIC.length + 4 || bytes.subarray(0, OPENSSH_MAGIC.length).toString('latin1') !== OPENSSH_MAGIC) return undefined;
  const length = bytes.readUInt32BE(OPENSSH_MAGIC.length);
  const start = OPENSSH_MAGIC.length + 4;
  if (length === 0 || length > 64 || start + length > bytes.length) return undefined;
  return bytes.subarray(start, start + length).toString('latin1');
}

/** Says why `text` is not an unencrypted private key, or undefined when it is one. */
export function privateKeyTextProblem(text: string): KeyProblem | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return { problem: 'it is empty', help: 'pass the file holding the private key (e.g. ~/.ssh/id_ed25519, not the .pub)' };
  if (PUBLIC_KEY_LINE.test(trimmed)) {
    return { problem: 'it is a public key', help: 'pass the private half (the file without .pub)' };
  }
  const block = PEM_BLOCK.exec(trimmed);
  if (block === null) {
    return { problem: 'it is not a private key (no -----BEGIN … PRIVATE KEY----- block)', help: 'pass an OpenSSH or PEM private key file' };
  }
  const [, label, body] = block as unknown as [string, string, string];
  if (label === 'ENCRYPTED PRIVATE KEY' || /^Proc-Type: 4,ENCRYPTED/m.test(body)) {
    return { problem: 'it is protected by a passphrase', help: AGENT_HELP };
  }
  if (label === 'OPENSSH PRIVATE KEY') {
    const cipher = openSshCipher(body);
    if (cipher === undefined) return { problem: 'its OpenSSH private key block is damaged', help: 'export the key again (ssh-keygen -p rewrites it)' };
    if (cipher !== 'none') return { problem: 'it is protected by a passphrase', help: AGENT_HELP };
    return undefined;
  }
  if (!/^(RSA |EC |DSA )?PRIVATE KEY$/.test(label)) {
    return { problem: `it holds a ${label} block, not a private key`, help: 'pass an OpenSSH or PEM private key file' };
  }
  return undefined;
}

/** Says why a key file with these permission bits is unsafe, or undefined (ssh refuses keys others can read). */
export function privateKeyModeProblem(mode: number, file: string): KeyProblem | undefined {
  const permissions = mode & 0o777;
  if ((permissions & 0o077) === 0) return undefined;
  const octal = permissions.toString(8).padStart(4, '0');
  return { problem: `permissions ${octal} are too open (others can read the key)`, help: `chmod 600 ${file}` };
}
