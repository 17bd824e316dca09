/** The CLI's contract: --help on every command, exit code 2 for bad usage. */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, main } from '../../src/cli/program.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((child) => {
    const path = [...prefix, child.name()];
    return [path, ...commandPaths(child, path)];
  });
}

const paths = commandPaths(buildProgram(capture().io)).filter((p) => p[p.length - 1] !== 'help');

describe('exocomp CLI', () => {
  it('has the documented commands', () => {
    const names = paths.map((p) => p.join(' '));
    for (const expected of [
      'provision run',
      'provision status',
      'provision resume',
      'approval decide',
      'approval list',
      'approval show',
      'host onboard',
      'host known-hosts',
      'workspace apply',
      'playbook run',
      'playbook vendor',
      'schedule add',
      'schedule list',
      'schedule remove',
      'inventory show',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it.each(paths.map((p) => [p.join(' '), p]))('%s --help exits 0 with usage', async (_name, path) => {
    const { io, out } = capture();
    expect(await main([...path, '--help'], io)).toBe(0);
    expect(out.join('\n')).toMatch(new RegExp(`Usage: exocomp ${path.join(' ')}`));
  });

  it('offers --allow-local-state only where a workspace is applied (drift never applies)', async () => {
    const help = async (path: string[]) => {
      const { io, out } = capture();
      await main([...path, '--help'], io);
      return out.join('\n');
    };
    expect(await help(['provision', 'run'])).toContain('--allow-local-state');
    expect(await help(['provision', 'resume'])).toContain('--allow-local-state');
    expect(await help(['workspace', 'apply'])).toContain('--allow-local-state');
    expect(await help(['drift'])).toContain('--tofu-binary');
    expect(await help(['drift'])).not.toContain('--allow-local-state');
    expect(await help(['provision', 'run'])).toContain('--allow-destroy');
    expect(await help(['provision', 'resume'])).toContain('--allow-destroy');
  });

  it('every command that does work has --json', () => {
    const program = buildProgram(capture().io);
    const leaves = paths.filter((p) => {
      let command: Command | undefined = program;
      for (const name of p) command = command?.commands.find((c) => c.name() === name);
      return command !== undefined && command.commands.length === 0;
    });
    for (const path of leaves) {
      let command: Command | undefined = program;
      for (const name of path) command = command?.commands.find((c) => c.name() === name);
      expect(
        command!.options.map((o) => o.long),
        path.join(' '),
      ).toContain('--json');
    }
  });

  it.each([
    [['nonsense']],
    [['provision', 'run']],
    [['provision', 'run', 'ws', 'pb.yml', '--ssh-wait', 'soon']],
    [['provision', 'status', '--no-such-flag']],
    [['provision']],
  ])('bad usage %j exits 2 and says what is wrong', async (argv) => {
    const { io, err } = capture();
    expect(await main(argv, io)).toBe(2);
    expect(err.join('\n')).toMatch(/error|missing|unknown|usage/i);
  });
});
