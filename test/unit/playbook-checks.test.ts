import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPlaybookFile } from '../../src/app/provision/input-checks.js';
import { playbookTextProblem } from '../../src/domain/playbook.js';
import { thrown } from '../support/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'exocomp-input-checks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('playbooks', () => {
  it.each([
    ['- hosts: all\n  tasks: []\n', undefined],
    ['- import_playbook: other.yml\n', undefined],
    ['hosts: all\n', 'it is not a list of plays (a playbook is a YAML list: - hosts: …)'],
    ['', 'it is not a list of plays (a playbook is a YAML list: - hosts: …)'],
    ['[]', 'it holds no plays'],
    ['- hosts: all\n- just text\n', 'play 2 is not a mapping (hosts:, tasks: …)'],
    ['- hosts: [all\n  tasks: x: y\n', 'it is not valid YAML (line 2)'],
  ])('%j → %s', (text, problem) => {
    expect(playbookTextProblem(text)).toBe(problem);
  });

  it('refuses a missing playbook, a directory and a file that is not YAML', () => {
    mkdirSync(join(dir, 'plays'));
    writeFileSync(join(dir, 'bad.yml'), '\t- {{ nope');
    expect(thrown(() => checkPlaybookFile(join(dir, 'nope.yml'), 'playbook')).message).toBe(
      `playbook "${join(dir, 'nope.yml')}" does not exist`,
    );
    expect(thrown(() => checkPlaybookFile(join(dir, 'plays'), 'playbook')).message).toBe(
      `playbook "${join(dir, 'plays')}" is a directory, not a playbook file`,
    );
    expect(thrown(() => checkPlaybookFile(join(dir, 'bad.yml'), 'playbook')).message).toMatch(
      /^playbook ".*bad.yml": it is not valid YAML/,
    );
  });
});
