import { describe, expect, it } from 'vitest';
import { gitFailureText } from '../../src/adapters/git.js';

const failed = (stderr: string, stdout = '', code = 1) => ({ code, signal: null, stdout, stderr });

describe('gitFailureText', () => {
  it("reports a failure by git's fatal and error lines and its exit status, never by its warnings or hints", () => {
    const stderr = [
      'warning: fetch normally indicates which branches had a forced update,',
      'but that check has been disabled; to re-enable, use --show-forced-updates',
      'hint: Updates were rejected because the remote contains work that you do not have locally.',
      "error: cannot lock ref 'refs/x': Unable to create '/c/refs/x.lock': File exists.",
      'Another git process seems to be running in this repository, e.g.',
      "fatal: Unable to create '/c/shallow.lock': File exists.",
      '',
    ].join('\n');
    expect(gitFailureText(failed(stderr, '', 128))).toBe(
      "error: cannot lock ref 'refs/x': Unable to create '/c/refs/x.lock': File exists. | fatal: Unable to create '/c/shallow.lock': File exists. (git exited with status 128)",
    );
  });

  it("keeps the remote's lines and a push's rejected refs", () => {
    const stdout = 'To /r.git\n!\trefs/heads/a:refs/heads/a\t[remote rejected] (pre-receive hook declined)\nDone\n';
    expect(gitFailureText(failed('remote: GH006: Protected branch update failed\n', stdout))).toBe(
      'remote: GH006: Protected branch update failed | !\trefs/heads/a:refs/heads/a\t[remote rejected] (pre-receive hook declined) (git exited with status 1)',
    );
  });

  it('without fatal or error lines, says what else git said but its warnings; without any, says so', () => {
    expect(gitFailureText(failed('warning: ignoring --negotiation-tip=x*\nsomething odd\n'))).toBe(
      'something odd (git exited with status 1)',
    );
    expect(gitFailureText(failed('warning: only this\nhint: and this\n'))).toBe(
      'git exited with status 1 without a word',
    );
    expect(gitFailureText({ code: 128, signal: 'SIGTERM', stdout: '', stderr: '' })).toBe(
      'git was ended by SIGTERM without a word',
    );
  });
});
