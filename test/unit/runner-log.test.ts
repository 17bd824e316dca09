/**
 * Text a GitHub runner never takes for a workflow command (src/domain/runner-log.ts), for the CLI in a
 * workflow `run:` step (issue 10): checked against the runner emulation's command processing, over
 * arbitrary text built from the pieces commands are made of.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inertJson, inertLines } from '../../src/domain/runner-log.js';
import { WorkflowCommandProcessor } from '../support/workflow-commands.js';

/** What the runner makes of `text`: it reads lines ending at \n, \r\n or \r. */
function asRunner(text: string) {
  const runner = new WorkflowCommandProcessor(true);
  runner.write('stdout', `${text.split(/\r\n|\r|\n/).join('\n')}\n`);
  runner.end();
  return runner;
}

const lines = (text: string) => text.split(/\r\n|\r|\n/);
const piece = fc.oneof(
  fc.constantFrom(
    '::',
    '##[',
    '#',
    ':',
    ']',
    ' ',
    '\t',
    '\n',
    '\r',
    '\r\n',
    'error',
    'warning',
    'notice',
    'add-mask',
    'set-output name=x',
    'stop-commands',
    'group',
    'echo',
    'spoofed',
    '%0A',
    '\u200b',
  ),
  fc.string({ maxLength: 6 }),
);
const text = fc.array(piece, { maxLength: 30 }).map((pieces) => pieces.join(''));

describe('inertLines', () => {
  it('turns the spoofed lines of a host into text the runner shows as they read', () => {
    const spoofed = [
      '::error::spoofed',
      '  ::set-output name=state::provisioned',
      '::add-mask::converged',
      'legacy ##[warning]spoofed too',
      '::stop-commands::t',
      '::t::',
    ];
    const runner = asRunner(inertLines(spoofed.join('\n')));
    expect(runner.annotations).toEqual([]);
    expect(runner.masks).toEqual([]);
    expect(runner.outputs).toEqual({});
    expect(runner.log.replaceAll('\u200b', '')).toBe(spoofed.join('\n'));
  });

  it('leaves text that holds no command as it is', () => {
    for (const line of ['[2/4] ssh-wait … 3s ✓', 'a::b', '# heading', 'x ## [y]', ''])
      expect(inertLines(line)).toBe(line);
  });

  it('never lets a line run as a command, and changes only by zero-width spaces', () => {
    fc.assert(
      fc.property(text, (input) => {
        const runner = asRunner(inertLines(input));
        expect(runner.annotations).toEqual([]);
        expect(runner.masks).toEqual([]);
        expect(runner.outputs).toEqual({});
        expect(runner.state).toEqual({});
        expect(lines(inertLines(input).replaceAll('\u200b', ''))).toEqual(lines(input.replaceAll('\u200b', '')));
        expect(runner.log.split('\n')).toEqual(lines(inertLines(input)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('inertJson', () => {
  it('keeps the JSON the same and never lets it run as a command', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(text, { maxLength: 4 }), (value, strings) => {
        const document = { value, strings };
        const line = inertJson(JSON.stringify(document));
        expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(document)));
        const runner = asRunner(line);
        expect(runner.annotations).toEqual([]);
        expect(runner.masks).toEqual([]);
        expect(runner.outputs).toEqual({});
        expect(runner.log).toBe(line);
      }),
      { numRuns: 1000 },
    );
  });
});
