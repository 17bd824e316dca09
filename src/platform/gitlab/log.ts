/**
 * The job log of a GitLab job: collapsible sections (`section_start`/`section_end`
 * markers, https://docs.gitlab.com/ci/jobs/job_logs/#custom-collapsible-sections).
 * GitLab has no masking command a job can call, so every line is redacted by the
 * tool itself before it is written, and a line from a child process can never
 * forge a section marker (the escape character is replaced).
 */
import type { SecretRegistry } from '../../app/runtime/secrets.js';

const ESC = '\u001b';

export interface GitLabLog {
  info(message: string): void;
  notice(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  startGroup(title: string): void;
  endGroup(): void;
}

/** A section name GitLab accepts: letters, digits, `_`, `.`, `-`. */
export function sectionName(title: string, index: number): string {
  const base =
    title
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 40) || 'section';
  return `exocomp_${index}_${base}`;
}

export function createGitLabLog(
  secrets: SecretRegistry,
  write: (text: string) => void = (t) => process.stdout.write(t),
  now: () => number = () => Date.now(),
): GitLabLog {
  const open: string[] = [];
  let count = 0;
  // Redact first, then neutralise escapes: a secret must not be split by the replacement.
  const clean = (message: string) => secrets.redact(message).replaceAll(ESC, '^[');
  const line = (prefix: string, message: string) => {
    for (const part of clean(message).split(/\r?\n/)) write(`${prefix}${part}\n`);
  };
  const stamp = () => Math.floor(now() / 1000);
  return {
    info: (m) => line('', m),
    notice: (m) => line('notice: ', m),
    warning: (m) => line('warning: ', m),
    error: (m) => line('error: ', m),
    startGroup(title) {
      count += 1;
      const name = sectionName(title, count);
      open.push(name);
      write(
        `${ESC}[0Ksection_start:${stamp()}:${name}[collapsed=true]\r${ESC}[0K${clean(title).split(/\r?\n/)[0] ?? ''}\n`,
      );
    },
    endGroup() {
      const name = open.pop();
      if (name !== undefined) write(`${ESC}[0Ksection_end:${stamp()}:${name}\r${ESC}[0K\n`);
    },
  };
}
