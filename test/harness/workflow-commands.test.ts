/** The runner emulation's workflow-command processing, against the runner's documented and coded behaviour. */
import { describe, expect, it } from 'vitest';
import { WorkflowCommandProcessor } from '../support/workflow-commands.js';

function process(...chunks: Array<[stream: 'stdout' | 'stderr', text: string]>): WorkflowCommandProcessor {
  const commands = new WorkflowCommandProcessor();
  for (const [stream, text] of chunks) commands.write(stream, text);
  commands.end();
  return commands;
}

describe('workflow commands as the runner processes them', () => {
  it('masks a value in every line after its add-mask, not before', () => {
    const c = process([
      'stdout',
      'early s3cr3t-value\n::add-mask::s3cr3t-value\nlate s3cr3t-value and again s3cr3t-value\n',
    ]);
    expect(c.masks).toEqual(['s3cr3t-value']);
    expect(c.log).toBe('early s3cr3t-value\nlate *** and again ***');
  });

  it('masks lines of stderr too, and commands there are processed', () => {
    const c = process(
      ['stdout', '::add-mask::tok-1234\n'],
      ['stderr', 'stderr says tok-1234\n::warning file=a.tf,line=3::careful\n'],
    );
    expect(c.log).toBe('stderr says ***\n##[warning]careful');
    expect(c.annotations).toEqual([{ level: 'warning', message: 'careful', properties: { file: 'a.tf', line: '3' } }]);
  });

  it('turns ::error, ::warning and ::notice into annotations, with escaped data unescaped', () => {
    const c = process(['stdout', '::error::two%0Alines\n  ::notice title=t::indented\n::ERROR::upper\n']);
    expect(c.annotations.map((a) => [a.level, a.message])).toEqual([
      ['error', 'two\nlines'],
      ['notice', 'indented'],
      ['error', 'upper'],
    ]);
  });

  it('processes the legacy ##[cmd] form anywhere in a line', () => {
    const c = process(['stdout', 'host says ##[error]legacy\n']);
    expect(c.annotations).toEqual([{ level: 'error', message: 'legacy', properties: {} }]);
  });

  it('collects ::set-output and ::save-state', () => {
    const c = process(['stdout', '::set-output name=state::provisioned\n::save-state name=id::w-1\n']);
    expect(c.outputs).toEqual({ state: 'provisioned' });
    expect(c.state).toEqual({ id: 'w-1' });
    expect(c.log).toBe('');
  });

  it('prints everything as text between stop-commands and its token, then processes again', () => {
    const c = process([
      'stdout',
      [
        '::stop-commands::tok-8f2a',
        '::error::spoofed',
        '::set-output name=state::provisioned',
        '::add-mask::provisioned',
        'x ##[warning]legacy spoof',
        '::stop-commands::other',
        '::tok-8f2a::',
        '::notice::ours',
        '',
      ].join('\n'),
    ]);
    expect(c.annotations).toEqual([{ level: 'notice', message: 'ours', properties: {} }]);
    expect(c.outputs).toEqual({});
    expect(c.masks).toEqual([]);
    expect(c.log.split('\n')).toEqual([
      '::stop-commands::tok-8f2a',
      '::error::spoofed',
      '::set-output name=state::provisioned',
      '::add-mask::provisioned',
      'x ##[warning]legacy spoof',
      '::stop-commands::other',
      '::tok-8f2a::',
      '##[notice]ours',
    ]);
  });

  it('leaves unregistered names and malformed lines as text', () => {
    const c = process(['stdout', '::frobnicate::x\n::error no end\nplain\n']);
    expect(c.annotations).toEqual([]);
    expect(c.log).toBe('::frobnicate::x\n::error no end\nplain');
  });

  it('joins lines split across chunks before processing them', () => {
    const c = process(['stdout', '::err'], ['stdout', 'or::split\nlast line without newline']);
    expect(c.annotations).toEqual([{ level: 'error', message: 'split', properties: {} }]);
    expect(c.log).toBe('##[error]split\nlast line without newline');
  });

  it('ends a line at a lone \\r as well (ReadLine), and reads a \\r\\n split across chunks as one line end', () => {
    const c = process(['stdout', 'progress 50%\r::error::after a carriage return\r'], ['stdout', '\nnext\r\n']);
    expect(c.annotations).toEqual([{ level: 'error', message: 'after a carriage return', properties: {} }]);
    expect(c.log).toBe('progress 50%\n##[error]after a carriage return\nnext');
  });

  it('refuses the disabled set-env and add-path commands with an error', () => {
    const c = process(['stdout', '::set-env name=A::b\n']);
    expect(c.annotations[0]?.level).toBe('error');
  });
});
