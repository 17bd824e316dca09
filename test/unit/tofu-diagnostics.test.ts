import { describe, expect, it } from 'vitest';
import {
  codeQualityReport,
  diagnosticHeadline,
  readUiLine,
  readValidateJson,
  relativeToRepository,
  type TofuDiagnostic,
} from '../../src/domain/tofu-diagnostics.js';

// The shapes of OpenTofu's Machine-Readable UI and `validate -json` (fields we do not read included).
const range = {
  filename: 'main.tf',
  start: { line: 12, column: 13, byte: 201 },
  end: { line: 12, column: 28, byte: 216 },
};
const diagnosticLine = JSON.stringify({
  '@level': 'error',
  '@message': 'Error: Reference to undeclared resource',
  '@module': 'tofu.ui',
  '@timestamp': '2026-12-01T10:00:00.000000Z',
  diagnostic: {
    severity: 'error',
    summary: 'Reference to undeclared resource',
    detail: 'A managed resource "aws_instance" "web" has not been declared in the root module.',
    range,
    snippet: { context: 'output "ip"', code: '  value = aws_instance.web.ip', start_line: 12, values: [] },
  },
  type: 'diagnostic',
});

describe('readUiLine', () => {
  it('reads a diagnostic with its file, line and column, and shows it as tofu’s text', () => {
    const read = readUiLine(diagnosticLine);
    expect(read?.diagnostic).toEqual({
      severity: 'error',
      summary: 'Reference to undeclared resource',
      detail: 'A managed resource "aws_instance" "web" has not been declared in the root module.',
      file: 'main.tf',
      line: 12,
      column: 13,
      endLine: 12,
    });
    expect(read?.text).toEqual([
      'Error: Reference to undeclared resource',
      '  on main.tf line 12',
      'A managed resource "aws_instance" "web" has not been declared in the root module.',
    ]);
    expect(diagnosticHeadline(read!.diagnostic!)).toBe('main.tf:12: Reference to undeclared resource');
  });

  it('shows other messages as their @message, never their fields (outputs carry sensitive values)', () => {
    const outputs = JSON.stringify({
      '@message': 'Outputs: 1',
      type: 'outputs',
      outputs: { password: { sensitive: true, value: 'hunter2-secret' } },
    });
    expect(readUiLine(outputs)).toEqual({ text: ['Outputs: 1'] });
    expect(readUiLine(JSON.stringify({ type: 'some_future_type' }))).toEqual({ text: [] });
  });

  it('leaves a line that is no JSON UI message to be shown as it is', () => {
    expect(readUiLine('Error: Failed to parse command-line flags')).toBeUndefined();
    expect(readUiLine('{not json')).toBeUndefined();
    expect(readUiLine('{"no":"type"}')).toBeUndefined();
  });

  it('a diagnostic without a range (or with one it cannot read) names no file', () => {
    const bare = JSON.stringify({ type: 'diagnostic', diagnostic: { severity: 'warning', summary: 'Deprecated' } });
    expect(readUiLine(bare)?.diagnostic).toEqual({ severity: 'warning', summary: 'Deprecated' });
    const odd = JSON.stringify({
      type: 'diagnostic',
      diagnostic: { severity: 'error', summary: 's', range: { filename: 'x.tf', start: { line: 'one' } } },
    });
    expect(readUiLine(odd)?.diagnostic).toBeUndefined();
  });
});

describe('readValidateJson', () => {
  it('reads the diagnostics of validate -json; anything else is undefined', () => {
    const doc = JSON.stringify({
      format_version: '1.0',
      valid: false,
      error_count: 1,
      warning_count: 0,
      diagnostics: [{ severity: 'error', summary: 'Unsupported argument', range }],
    });
    expect(readValidateJson(doc)).toEqual([
      { severity: 'error', summary: 'Unsupported argument', file: 'main.tf', line: 12, column: 13, endLine: 12 },
    ]);
    expect(readValidateJson('Success! The configuration is valid.')).toBeUndefined();
    expect(readValidateJson('{"valid":true}')).toBeUndefined();
  });
});

describe('relativeToRepository and codeQualityReport', () => {
  const error: TofuDiagnostic = { severity: 'error', summary: 'Bad', detail: 'why', file: 'main.tf', line: 3 };

  it('names the file from the repository root; a file outside it keeps no place', () => {
    expect(relativeToRepository(error, 'infra/prod').file).toBe('infra/prod/main.tf');
    expect(relativeToRepository(error, '.').file).toBe('main.tf');
    expect(relativeToRepository({ ...error, file: '../../elsewhere.tf' }, 'infra')).toEqual({
      severity: 'error',
      summary: 'Bad',
      detail: 'why',
    });
    expect(relativeToRepository({ ...error, file: '/etc/x.tf' }, 'infra').file).toBeUndefined();
  });

  it('writes GitLab’s Code Climate subset for diagnostics with a place, once each', () => {
    const report = codeQualityReport([
      error,
      error,
      { severity: 'warning', summary: 'Old', file: 'vars.tf', line: 1 },
      { severity: 'error', summary: 'No place' },
    ]);
    expect(report).toHaveLength(2);
    expect(report[0]).toEqual({
      description: 'Bad: why',
      check_name: 'tofu error',
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
      severity: 'major',
      location: { path: 'main.tf', lines: { begin: 3 } },
    });
    expect(report[1]).toMatchObject({ severity: 'minor', location: { path: 'vars.tf', lines: { begin: 1 } } });
  });
});
