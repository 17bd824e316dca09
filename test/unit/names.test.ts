import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import {
  defaultWorkspaceName,
  envNameForOutput,
  parseInventoryRef,
  parseUserName,
  parseWorkflowId,
  parseWorkspaceName,
  quoteValue,
} from '../../src/domain/names.js';
import { thrown } from '../support/errors.js';

describe('quoteValue', () => {
  it.each([
    ['edge', '"edge"'],
    ['a"b', '"a\\"b"'],
    ['a\nb', '"a\\nb"'],
    ['\u001b[31mred', '"\\u001b[31mred"'],
    ['x\u202Ey', '"x\\u202ey"'],
    ['é', '"\\u00e9"'],
  ])('%j → %s', (raw, quoted) => {
    expect(quoteValue(raw)).toBe(quoted);
  });

  it('cuts long values short', () => {
    expect(quoteValue('a'.repeat(100))).toBe(`"${'a'.repeat(80)}\\u2026"`);
    expect(quoteValue('abcdef', 3)).toBe('"abc\\u2026"');
  });
});

describe('parseWorkspaceName', () => {
  it.each(['edge', 'a', '0', 'web-1', 'prod.eu_west-1', '1.2', 'a'.repeat(64), 'x-'])('accepts %j', (name) => {
    expect(parseWorkspaceName(name)).toBe(name);
  });

  it.each([
    ['', 'it is empty'],
    ['a'.repeat(65), 'it is 65 characters long (at most 64)'],
    ['Edge', 'it contains uppercase letters'],
    ['infra/edge', 'it contains a path separator'],
    ['infra\\edge', 'it contains a path separator'],
    ['my edge', 'it contains whitespace'],
    ['edge\t', 'it contains whitespace'],
    ['a..b', "it contains '..'"],
    ['..', "it contains '..'"],
    ['.hidden', 'it does not start with a letter or digit'],
    ['-edge', 'it does not start with a letter or digit'],
    ['_edge', 'it does not start with a letter or digit'],
    ['edge;rm', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['edge$(id)', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['edge`x`', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['edge|x', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['edge&', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['edge*', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['édge', 'it does not start with a letter or digit'],
    ['tf:edge', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    // A ledger path component (and a git ref component) may not end with '.'.
    ['x.', "it ends with '.'"],
  ])('refuses %j: %s', (name, problem) => {
    const error = thrown(() => parseWorkspaceName(name));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(`invalid workspace name ${quoteValue(name)}: ${problem}`);
    expect(error.help).toContain("a workspace name is 1-64 characters of a-z, 0-9, '.', '_' and '-'");
    expect(error.help).toContain("neither contains '..' nor ends with '.'");
  });

  it('shows control characters escaped, never raw', () => {
    const error = thrown(() => parseWorkspaceName('edge\u001b[2J'));
    expect(error.message).toContain('"edge\\u001b[2J"');
    expect(error.message).not.toContain('\u001b');
  });
});

describe('defaultWorkspaceName', () => {
  it.each([
    ['infra/edge', 'edge'],
    ['/srv/tofu/edge/', 'edge'],
    ['edge', 'edge'],
    ['/work/prod.eu-1', 'prod.eu-1'],
  ])('%j → %j', (path, name) => {
    expect(defaultWorkspaceName(path)).toBe(name);
  });

  it.each([
    ['infra/Edge', '"Edge"', 'it contains uppercase letters'],
    ['infra/my edge', '"my edge"', 'it contains whitespace'],
    ['.', '"."', 'it does not start with a letter or digit'],
    ['/', '""', 'it is empty'],
    ['', '""', 'it is empty'],
  ])('refuses %j without transforming it', (path, shownBase, problem) => {
    const error = thrown(() => defaultWorkspaceName(path));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(
      `cannot use the basename ${shownBase} of workspace path ${quoteValue(path)} as the workspace name: ${problem}`,
    );
    expect(error.help).toMatch(/^pass --workspace-name <name>; a workspace name is/);
  });
});

describe('parseInventoryRef', () => {
  it.each([
    ['tf:edge', { kind: 'standing', name: 'edge' }],
    ['tf:prod.eu-1', { kind: 'standing', name: 'prod.eu-1' }],
    ['inventory.yml', { kind: 'file', path: 'inventory.yml' }],
    ['./tf:edge', { kind: 'file', path: './tf:edge' }],
    ['/etc/ansible/hosts', { kind: 'file', path: '/etc/ansible/hosts' }],
    ['TF:edge', { kind: 'file', path: 'TF:edge' }],
  ])('%j', (raw, ref) => {
    expect(parseInventoryRef(raw)).toEqual(ref);
  });

  it.each([
    ['tf:', 'it is empty'],
    ['tf:Edge', 'it contains uppercase letters'],
    ['tf:../edge', 'it contains a path separator'],
    ['tf:..', "it contains '..'"],
    ['tf:edge prod', 'it contains whitespace'],
  ])('refuses %j', (raw, problem) => {
    const error = thrown(() => parseInventoryRef(raw));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`invalid inventory reference ${quoteValue(raw)}: the workspace name ${problem}`);
    expect(error.help).toMatch(/^write tf:<workspace name>; a workspace name is/);
  });

  it('refuses an empty reference', () => {
    const error = thrown(() => parseInventoryRef(''));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe('the inventory reference is empty');
    expect(error.help).toContain('tf:<workspace name>');
  });
});

describe('envNameForOutput', () => {
  it.each([
    ['db_password', 'DB_PASSWORD'],
    ['db-password', 'DB_PASSWORD'],
    ['DB_Password', 'DB_PASSWORD'],
    ['_token', '_TOKEN'],
    ['api_key_2', 'API_KEY_2'],
    ['x', 'X'],
  ])('%j → %j', (output, env) => {
    expect(envNameForOutput(output)).toBe(env);
  });

  it.each([
    ['2fa_secret', '"2FA_SECRET"'],
    ['9lives', '"9LIVES"'],
    ['', '""'],
    ['db.password', '"DB.PASSWORD"'],
    ['db password', '"DB PASSWORD"'],
    ['ıd', '"ID"'],
    ['straße', '"STRASSE"'],
  ])('refuses %j', (output, shownEnv) => {
    const error = thrown(() => envNameForOutput(output));
    expect(error.kind).toBe('seal');
    expect(error.message).toBe(
      `output ${quoteValue(output)} cannot be bound to an environment variable: ${shownEnv} is not of the form [A-Z_][A-Z0-9_]*`,
    );
    expect(error.help).toContain('rename the output');
  });

  it.each([
    ['path', 'PATH'],
    ['home', 'HOME'],
    ['ld_preload', 'LD_PRELOAD'],
    ['ansible_become_pass', 'ANSIBLE_BECOME_PASS'],
    ['ssh_auth_sock', 'SSH_AUTH_SOCK'],
    ['pythonpath', 'PYTHONPATH'],
    ['exocomp_seal_key', 'EXOCOMP_SEAL_KEY'],
    ['github-token', 'GITHUB_TOKEN'],
  ])('refuses %j, which would replace %s', (output, env) => {
    const error = thrown(() => envNameForOutput(output));
    expect(error.kind).toBe('seal');
    expect(error.message).toBe(
      `output ${quoteValue(output)} would be bound to ${env}, which the play's runtime itself uses`,
    );
    expect(error.help).toContain('are reserved');
  });
});

describe('parseWorkflowId', () => {
  it.each(['edge-1a2b3c4d', 'a', '0', 'web.1_x-y', 'a'.repeat(64)])('accepts %j', (id) => {
    expect(parseWorkflowId(id)).toBe(id);
  });

  it.each([
    ['', 'it is empty'],
    ['a'.repeat(65), 'it is 65 characters long (at most 64)'],
    ['a'.repeat(300), 'it is 300 characters long (at most 64)'],
    ['ABC', 'it contains uppercase letters'],
    ['a/b', 'it contains a path separator'],
    ['..', "it contains '..'"],
    ['.git', 'it does not start with a letter or digit'],
    ['-rf', 'it does not start with a letter or digit'],
    ['x y', 'it contains whitespace'],
    ['x;id', "it contains characters other than a-z, 0-9, '.', '_' and '-'"],
    ['x.', "it ends with '.'"],
  ])('refuses %j: %s', (id, problem) => {
    const error = thrown(() => parseWorkflowId(id));
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(`invalid workflow id ${quoteValue(id)}: ${problem}`);
    expect(error.help).toContain('a workflow id is 1-64 characters');
  });
});

describe('parseUserName', () => {
  it.each(['exocomp', 'root', '_svc', 'deploy.bot', 'a-b_c', 'A'.repeat(32)])('accepts %j', (name) => {
    expect(parseUserName(name, '--onboard-user')).toBe(name);
  });

  it.each([
    ['', 'it is empty'],
    ['root;id', "it contains characters other than letters, digits, '.', '_' and '-'"],
    ['-oProxyCommand=x', "it starts with '-', which ssh would read as an option"],
    ['1abc', "it does not start with a letter or '_'"],
    ['a b', "it contains characters other than letters, digits, '.', '_' and '-'"],
    ['$(id)', "it does not start with a letter or '_'"],
    ['a'.repeat(33), 'it is 33 characters long (at most 32)'],
  ])('refuses %j: %s', (name, problem) => {
    const error = thrown(() => parseUserName(name, '--remote-user'));
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(`invalid --remote-user ${quoteValue(name)}: ${problem}`);
  });
});
