/**
 * Issue 38, item 3: the commands that store the keys, as `exocomp keys init` prints them, are the ones docs/keys.md
 * shows — GitLab's private keys as protected File variables (GitLab cannot mask a multi-line value), the seal
 * key as a masked one-line Variable — so the page and the command cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KEY_VARIABLES, keyStoreCommands } from '../../src/domain/key-variables.js';

const page = readFileSync(new URL('../../docs/keys.md', import.meta.url), 'utf8');
const files = [
  { secret: KEY_VARIABLES.fleet, path: 'keys/fleet_ed25519' },
  { secret: KEY_VARIABLES.bootstrap, path: 'keys/bootstrap_ed25519' },
  { secret: KEY_VARIABLES.seal, path: 'keys/seal.key' },
];

describe('keyStoreCommands', () => {
  it('stores the private keys as protected, unmasked File variables and the seal key masked', () => {
    const { gitlab } = keyStoreCommands(files);
    expect(gitlab[0]).toBe('glab variable set EXOCOMP_FLEET_KEY --type file --protected < keys/fleet_ed25519');
    expect(gitlab[1]).not.toContain('--masked');
    expect(gitlab[2]).toBe("tr -d '\\n' < keys/seal.key | glab variable set EXOCOMP_SEAL_KEY --masked --protected");
  });

  it('prints what docs/keys.md shows, and the page makes no claim GitLab cannot keep', () => {
    const { github, gitlab } = keyStoreCommands(files);
    for (const line of [...github, ...gitlab]) expect(page).toContain(`\n${line}\n`);
    expect(page).not.toMatch(/masked, protected CI\/CD variable of type File/);
    expect(page).not.toMatch(/sees a path to a 0600 file/);
  });
});
