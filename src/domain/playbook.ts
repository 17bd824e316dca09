import { parse as parseYaml } from 'yaml';

/**
 * Says why `text` is not a playbook ansible-playbook would run (a YAML list of
 * plays, each a mapping), or undefined when it is one. Parse errors give the
 * line, never the text.
 */
export function playbookTextProblem(text: string): string | undefined {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    const line = (error as { linePos?: Array<{ line: number }> }).linePos?.[0]?.line;
    return `it is not valid YAML${line === undefined ? '' : ` (line ${line})`}`;
  }
  if (!Array.isArray(data)) return 'it is not a list of plays (a playbook is a YAML list: - hosts: …)';
  if (data.length === 0) return 'it holds no plays';
  const index = data.findIndex((play) => play === null || typeof play !== 'object' || Array.isArray(play));
  if (index >= 0) return `play ${index + 1} is not a mapping (hosts:, tasks: …)`;
  return undefined;
}
