/**
 * OpenTofu's machine-readable diagnostics (issue 25 item 7, issue 27 item 6):
 * `plan -json` and `apply -json` print one JSON message per line, and
 * `validate -json` one document; a diagnostic carries severity, summary,
 * detail and, when it concerns the configuration, the file and line
 * (`range.filename`, `range.start.line`; OpenTofu's "Machine-Readable UI" and
 * `validate -json` docs). This is untrusted text: it is parsed with zod, shown
 * only as text, and turned into annotations (GitHub) or a code-quality report
 * (GitLab) by the faces. Unknown fields and message types are ignored, as the
 * format's compatibility promise asks.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { z } from 'zod';

const positionSchema = z.object({ line: z.number().int().positive(), column: z.number().int().positive().optional() });

const diagnosticSchema = z.object({
  severity: z.enum(['error', 'warning']),
  summary: z.string(),
  detail: z.string().optional(),
  address: z.string().optional(),
  range: z.object({ filename: z.string().min(1), start: positionSchema, end: positionSchema.optional() }).optional(),
});

/** One message of the streaming JSON UI: only `@message` and, for a diagnostic, the diagnostic are used. */
const uiMessageSchema = z.object({
  '@message': z.string().optional(),
  type: z.string(),
  diagnostic: z.unknown().optional(),
});

const validateSchema = z.object({ diagnostics: z.array(z.unknown()) });

export interface TofuDiagnostic {
  severity: 'error' | 'warning';
  summary: string;
  detail?: string;
  /** The resource address it concerns, when tofu named one. */
  address?: string;
  /** The configuration file, relative to the workspace directory (as tofu names it). */
  file?: string;
  line?: number;
  column?: number;
  endLine?: number;
}

function toDiagnostic(data: unknown): TofuDiagnostic | undefined {
  const parsed = diagnosticSchema.safeParse(data);
  if (!parsed.success) return undefined;
  const { severity, summary, detail, address, range } = parsed.data;
  return {
    severity,
    summary,
    ...(detail ? { detail } : {}),
    ...(address ? { address } : {}),
    ...(range
      ? {
          file: range.filename,
          line: range.start.line,
          ...(range.start.column ? { column: range.start.column } : {}),
          ...(range.end ? { endLine: range.end.line } : {}),
        }
      : {}),
  };
}

/** The diagnostic with every text in it passed through `redact`. */
export function redactDiagnostic(d: TofuDiagnostic, redact: (text: string) => string): TofuDiagnostic {
  return {
    ...d,
    summary: redact(d.summary),
    ...(d.detail === undefined ? {} : { detail: redact(d.detail) }),
    ...(d.address === undefined ? {} : { address: redact(d.address) }),
    ...(d.file === undefined ? {} : { file: redact(d.file) }),
  };
}

/** `main.tf line 15` (or nothing, for a diagnostic about no file). */
function whereOf(d: TofuDiagnostic): string | undefined {
  return d.file === undefined ? undefined : `${d.file}${d.line === undefined ? '' : ` line ${d.line}`}`;
}

/** A diagnostic as tofu's plain text shows it: `Error: summary`, where, then the detail. */
export function diagnosticLines(d: TofuDiagnostic): string[] {
  const where = whereOf(d);
  return [
    `${d.severity === 'error' ? 'Error' : 'Warning'}: ${d.summary}`,
    ...(where ? [`  on ${where}`] : []),
    ...(d.detail ? d.detail.split('\n') : []),
  ];
}

/** One line for an error message: `main.tf:15: summary`. */
export function diagnosticHeadline(d: TofuDiagnostic): string {
  const place = d.file === undefined ? '' : `${d.file}${d.line === undefined ? '' : `:${d.line}`}: `;
  return `${place}${d.summary}`;
}

/**
 * One line of `plan -json`/`apply -json` output: the text to show (the
 * message's `@message`, a diagnostic in full) and the diagnostic it carries.
 * Undefined for a line that is no JSON UI message (shown as it is).
 */
export function readUiLine(line: string): { text: string[]; diagnostic?: TofuDiagnostic } | undefined {
  if (!line.startsWith('{')) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return undefined;
  }
  const message = uiMessageSchema.safeParse(data);
  if (!message.success) return undefined;
  const diagnostic = message.data.type === 'diagnostic' ? toDiagnostic(message.data.diagnostic) : undefined;
  if (diagnostic) return { text: diagnosticLines(diagnostic), diagnostic };
  return { text: message.data['@message'] === undefined ? [] : [message.data['@message']] };
}

/** The diagnostics of `validate -json` (one document); undefined when the output is not that document. */
export function readValidateJson(stdout: string): TofuDiagnostic[] | undefined {
  let data: unknown;
  try {
    data = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  const parsed = validateSchema.safeParse(data);
  if (!parsed.success) return undefined;
  return parsed.data.diagnostics.flatMap((d) => toDiagnostic(d) ?? []);
}

/**
 * The diagnostic with its file relative to the repository (the annotation's
 * and the code-quality report's `path`): tofu names files relative to the
 * workspace directory, which is `workspaceDir` relative to the repository.
 * A file outside the repository keeps no path (it has no line to point at).
 */
export function relativeToRepository(d: TofuDiagnostic, workspaceDir: string): TofuDiagnostic {
  if (d.file === undefined) return d;
  const joined = posix.normalize(posix.join(workspaceDir, d.file));
  if (posix.isAbsolute(d.file) || joined === '..' || joined.startsWith('../')) {
    const { file: _file, line: _line, column: _column, endLine: _endLine, ...rest } = d;
    return rest;
  }
  return { ...d, file: joined };
}

/** One issue of GitLab's code-quality report (the Code Climate subset GitLab reads). */
export interface CodeQualityIssue {
  description: string;
  check_name: string;
  fingerprint: string;
  severity: 'info' | 'minor' | 'major' | 'critical' | 'blocker';
  location: { path: string; lines: { begin: number } };
}

/**
 * GitLab's code-quality report of the diagnostics that name a file and line
 * (GitLab requires `location.path` and `location.lines.begin`; docs: "Code
 * Quality report format"). Errors are `major`, warnings `minor`; the
 * fingerprint (GitLab compares reports by it) is the place and summary.
 */
export function codeQualityReport(diagnostics: readonly TofuDiagnostic[]): CodeQualityIssue[] {
  const issues = new Map<string, CodeQualityIssue>();
  for (const d of diagnostics) {
    if (d.file === undefined || d.line === undefined) continue;
    const fingerprint = createHash('sha256').update(`${d.severity}\0${d.file}\0${d.line}\0${d.summary}`).digest('hex');
    issues.set(fingerprint, {
      description: d.detail ? `${d.summary}: ${d.detail}` : d.summary,
      check_name: `tofu ${d.severity}`,
      fingerprint,
      severity: d.severity === 'error' ? 'major' : 'minor',
      location: { path: d.file, lines: { begin: d.line } },
    });
  }
  return [...issues.values()];
}
