/**
 * The real OpenTofu/Terraform binary on PATH, for the tests that apply with it
 * (issue 36): `tofu` where present, else `terraform`, as the product looks
 * (`locateTofu`). Without one, those tests are skipped locally, each describe
 * naming why; under CI (`CI` set, kept by setup-env.ts as
 * EXOCOMP_TEST_REQUIRES_REAL_TOFU) they fail instead, so a runner without the
 * binary cannot pass by skipping (`scripts/test` checks the same before it
 * starts).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { describe } from 'vitest';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return undefined;
}

/** Absolute path of the real binary, or undefined when neither `tofu` nor `terraform` is on PATH. */
export const realTofuBinary: string | undefined = onPath('tofu') ?? onPath('terraform');

/** Why the real-binary tests cannot run here. */
export const realTofuMissing = 'no real tofu or terraform on PATH (install OpenTofu or Terraform)';

/**
 * `describe` for tests that need the real binary: skipped with the reason in
 * its name when there is none, except under CI, where the suite fails.
 */
export function describeWithRealTofu(name: string, body: () => void): void {
  if (realTofuBinary !== undefined) {
    describe(name, body);
    return;
  }
  if (process.env.EXOCOMP_TEST_REQUIRES_REAL_TOFU) throw new Error(`${name}: ${realTofuMissing}`);
  // The default reporter names a skipped file, not why: say it once per describe.
  console.warn(`skipped "${name}": ${realTofuMissing}`);
  describe.skip(`${name} (skipped: ${realTofuMissing})`, body);
}

/** The real binary's path; throws when there is none (call it only inside describeWithRealTofu). */
export function requireRealTofu(): string {
  if (realTofuBinary === undefined) throw new Error(realTofuMissing);
  return realTofuBinary;
}

/**
 * Writes, in dir, an executable that records each call as the stand-in does
 * (one JSON line to `EXOCOMP_TOFU_STANDIN_LOG`: argv, cwd, time, pid) and then
 * becomes the real binary (`exec`: same pid, signals reach it directly), so the
 * tests read one log whichever binary ran.
 */
export async function recordingRealTofu(dir: string): Promise<string> {
  const path = join(dir, 'tofu-recording');
  const script = `#!/bin/sh
if [ -n "$EXOCOMP_TOFU_STANDIN_LOG" ]; then
  args=$(for arg in "$@"; do printf '%s\\n' "$arg"; done | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g; s/.*/"&"/' | paste -sd, -)
  cwd=$(printf '%s' "$PWD" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g')
  printf '{"argv":[%s],"cwd":"%s","at":"%s","pid":%d}\\n' "$args" "$cwd" "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" $$ >> "$EXOCOMP_TOFU_STANDIN_LOG"
fi
exec '${requireRealTofu()}' "$@"
`;
  await writeFile(path, script);
  await chmod(path, 0o755);
  return path;
}
