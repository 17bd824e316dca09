/**
 * Issue 25 item 7 / issue 27 item 6 through the plan action as the runner runs
 * it: a tofu error in the workspace's configuration becomes an error
 * annotation on its file and line (the path from the repository root, as
 * GitHub places annotations), and tofu's text — untrusted — never becomes a
 * workflow command of its own. Plan-only runs: no ledger write, no host.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActionFixture, describeRun, planInputs, WORKSPACE_DIR, type ActionFixture } from './helpers.js';

describe('tofu diagnostics on the runner', () => {
  let fx: ActionFixture;

  beforeAll(async () => {
    fx = await createActionFixture('edge');
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('an undeclared variable in main.tf.json line N is an error annotation naming the file and N', async () => {
    const file = join(fx.workspace, 'main.tf.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as { output: Record<string, unknown> };
    config.output.broken = { value: '${var.nope}' };
    const text = `${JSON.stringify(config, null, 2)}\n`;
    await writeFile(file, text);
    const line = text.split('\n').findIndex((l) => l.includes('var.nope')) + 1;

    const result = await fx.run('plan', { runId: 7001, with: planInputs({ 'plan-only': 'true' }) });
    expect(result.code, describeRun(result)).not.toBe(0);
    const placed = result.annotations.filter((a) => a.properties.file !== undefined);
    expect(placed).toEqual([
      {
        level: 'error',
        message: expect.stringContaining('Reference to undeclared input variable'),
        properties: expect.objectContaining({ file: `${WORKSPACE_DIR}/main.tf.json`, line: String(line) }),
      },
    ]);
  });

  it('a hostile summary stays one annotation: no output set, no mask added, no command run', async () => {
    // A tofu whose validate reports a diagnostic whose text tries to issue workflow commands.
    const hostile = 'Bad thing\n::set-output name=pwned::yes\n::add-mask::Bad\n::error file=x::forged';
    const document = JSON.stringify({
      valid: false,
      diagnostics: [
        {
          severity: 'error',
          summary: hostile,
          detail: '::warning::also forged',
          range: {
            filename: 'main.tf',
            start: { line: 7, column: 1, byte: 80 },
            end: { line: 7, column: 9, byte: 88 },
          },
        },
      ],
    });
    const tofu = join(fx.dir, 'hostile-tofu');
    await writeFile(
      tofu,
      `#!/bin/sh\ncase "$1" in\n  init) exit 0 ;;\n  validate) printf '%s\n' '${document}'; exit 1 ;;\nesac\nexit 1\n`,
    );
    await chmod(tofu, 0o755);

    const result = await fx.run('plan', {
      runId: 7002,
      with: planInputs({ 'plan-only': 'true', 'tofu-binary': tofu }),
    });
    expect(result.code, describeRun(result)).not.toBe(0);
    expect(result.outputs.pwned).toBeUndefined();
    expect(result.masks).not.toContain('Bad');
    const placed = result.annotations.filter((a) => a.properties.file !== undefined);
    expect(placed).toEqual([
      {
        level: 'error',
        message: `${hostile}\n\n::warning::also forged`,
        properties: expect.objectContaining({ file: `${WORKSPACE_DIR}/main.tf`, line: '7' }),
      },
    ]);
    expect(result.annotations.some((a) => a.level === 'warning' && a.message.includes('also forged'))).toBe(false);
  });
});
