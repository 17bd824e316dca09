import { describe, expect, it } from 'vitest';
import { AnsibleEventStream } from '../../src/adapters/ansible-events.js';
import { keyRefusedHelp } from '../../src/app/plays/play.js';
import {
  failureDetail,
  failureSummary,
  formatFailure,
  formatHostResult,
  type AnsibleEvent,
  type HostResult,
} from '../../src/domain/play-events.js';

const result = (over: Partial<HostResult> = {}): HostResult => ({
  event: 'result',
  action: 'ansible.builtin.command',
  host: 'web1',
  task: 'Create the fleet user',
  status: 'ok',
  index: 2,
  total: 7,
  elapsedMs: 1200,
  ...over,
});

describe('AnsibleEventStream', () => {
  it('joins chunks into lines, redacts every string, and hands each event on as it completes', () => {
    const seen: AnsibleEvent[] = [];
    const stream = new AnsibleEventStream(['s3cret'], (e) => seen.push(e));
    const line = JSON.stringify(result({ status: 'failed', stderr: 'token s3cret\nleaked', task: 'use s3cret' }));
    stream.push(line.slice(0, 17));
    stream.push(`${line.slice(17)}\n{"event":"task","task":"next","action":"debug",`);
    stream.push('"index":3,"total":7}');
    expect(seen).toHaveLength(1);
    stream.push('\n{"event":"result","status":"exploded"}\n');
    stream.end();
    expect(seen).toHaveLength(2);
    expect(stream.events).toEqual(seen);
    expect(seen[0]).toMatchObject({ status: 'failed', stderr: 'token ***\nleaked', task: 'use ***' });
  });
});

describe('rendering', () => {
  it('a host result on one line, with its position in the play', () => {
    expect(formatHostResult(result())).toBe('web1 · Create the fleet user ✓ (2/7)');
    expect(formatHostResult(result({ status: 'changed' }))).toBe('web1 · Create the fleet user ✓ changed (2/7)');
    expect(formatHostResult(result({ status: 'failed', total: 0 }))).toBe('web1 · Create the fleet user ✗');
    expect(formatHostResult(result({ status: 'failed', ignored: true }))).toBe(
      'web1 · Create the fleet user ✗ ignored (2/7)',
    );
    expect(formatHostResult(result({ task: 'evil\nname\u001b[31m' }))).toBe('web1 · evil name [31m ✓ (2/7)');
  });

  it('a failure once: host, task, message, then the first lines of stderr', () => {
    const failure = result({ status: 'failed', msg: 'non-zero return code', rc: 3, stderr: 'a\nb\n\nc\nd\ne\nf\ng' });
    expect(formatFailure(failure)).toEqual([
      'web1 · Create the fleet user: non-zero return code (rc 3)',
      '  stderr:',
      '    a',
      '    b',
      '    c',
      '    d',
      '    e',
      '    … 2 more line(s)',
    ]);
    expect(
      formatFailure(
        result({ status: 'unreachable', msg: 'Failed to connect to the host via ssh: Permission denied (publickey).' }),
      ),
    ).toEqual(['web1 · Create the fleet user: Failed to connect to the host via ssh: Permission denied (publickey).']);
    expect(formatFailure(result({ status: 'failed', stdout: 'only stdout' }))[1]).toBe('  stdout:');
  });

  it('a summary on one line for tables; everything for the ledger', () => {
    const failures = [
      result({ status: 'failed', msg: 'boom\nsecond line', rc: 1 }),
      result({ host: 'web2', status: 'unreachable', msg: 'gone' }),
    ];
    expect(failureSummary(failures)).toBe('web1 · Create the fleet user: boom (rc 1) (+1 more host failure)');
    expect(failureSummary([])).toBe('');
    expect(failureDetail(failures)).toBe(
      'web1 · Create the fleet user: failed (rc 1)\nmsg: boom\nsecond line\n\nweb2 · Create the fleet user: unreachable\nmsg: gone',
    );
  });
});

describe('keyRefusedHelp', () => {
  const refused = result({
    host: 'web2',
    status: 'unreachable',
    msg: 'Failed to connect to the host via ssh: exocomp@127.0.0.2: Permission denied (publickey).',
  });
  it('names the hosts, the key offered and how to pass the right one', () => {
    expect(keyRefusedHelp({ failures: [refused] }, { user: 'exocomp' })).toMatch(
      /^web2 refused the key: no key was given, so ssh offered only its defaults \(~\/\.ssh\/id_\*, an agent\) as user exocomp\. Pass the fleet key that onboarding installed: --fleet-key <private key file>/,
    );
    expect(keyRefusedHelp({ failures: [refused] }, { key: 'the fleet key keys/old', user: 'exocomp' })).toContain(
      'it offered the fleet key keys/old as user exocomp',
    );
  });
  it('says nothing for other failures', () => {
    expect(
      keyRefusedHelp(
        {
          failures: [
            result({ status: 'failed', msg: 'boom' }),
            result({ status: 'unreachable', msg: 'Connection refused' }),
          ],
        },
        { user: 'u' },
      ),
    ).toBeUndefined();
  });
});
