/**
 * Whether a file can serve as an SSH private key for a run, judged before
 * anything is recorded, with messages that say what to do (ssh itself prints
 * only `@@@@ WARNING: UNPROTECTED PRIVATE KEY FILE! @@@@` or
 * `Permission denied (publickey)`).
 */

export interface KeyFileFacts {
  /** The option or input that named it, for the message (`--fleet-key`, `the fleet-private-key input`). */
  role: string;
  /** Empty when the key is a secret value written to a private file by us. */
  path: string;
  isFile: boolean;
  /** st_mode & 0o777 */
  mode: number;
  text: string;
}

export interface KeyFileProblem {
  message: string;
  help: string;
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8).padStart(3, '0')}`;

export function judgeKeyFile(facts: KeyFileFacts): KeyFileProblem | undefined {
  const { path } = facts;
  /** `--fleet-key keys/fleet_ed25519`, or only the input's name when the key came as a secret value. */
  const role = path === '' ? facts.role : `${facts.role} ${path}`;
  if (!facts.isFile)
    return {
      message: `${role} is not a file`,
      help: 'pass the private key file (e.g. fleet_ed25519, not the directory that holds it)',
    };
  const text = facts.text.trim();
  if (/^(ssh-|ecdsa-|sk-)[\w@.-]+ [A-Za-z0-9+/=]+/.test(text)) {
    return {
      message: `${role} is a public key`,
      help: `pass the private half (the same name without .pub); exocomp derives the public key from it`,
    };
  }
  if (!/^-----BEGIN (OPENSSH|RSA|EC|DSA)? ?PRIVATE KEY-----/.test(text)) {
    return {
      message: `${role} is not an SSH private key`,
      help: 'make one with: exocomp keys init (or ssh-keygen -t ed25519 -N "" -f <file>)',
    };
  }
  if (isEncrypted(text)) {
    return {
      message: `${role} is protected by a passphrase, and a run cannot type it`,
      help: `remove the passphrase: ssh-keygen -p -N "" -f ${path} (keep the file 0600, or store it only as a CI secret)`,
    };
  }
  if ((facts.mode & 0o077) !== 0) {
    return {
      message: `permissions ${octal(facts.mode)} of ${role} are too open: ssh refuses a private key others can read`,
      help: `chmod 600 ${path}`,
    };
  }
  return undefined;
}

/** PEM keys say ENCRYPTED; OpenSSH keys name their cipher after the magic (`none` when clear). */
function isEncrypted(text: string): boolean {
  if (/ENCRYPTED/.test(text)) return true;
  const body = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(text)?.[1];
  if (!body) return false;
  const bytes = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  const magic = 'openssh-key-v1\0';
  if (bytes.subarray(0, magic.length).toString('latin1') !== magic) return false;
  const length = bytes.readUInt32BE(magic.length);
  return bytes.subarray(magic.length + 4, magic.length + 4 + length).toString('latin1') !== 'none';
}
