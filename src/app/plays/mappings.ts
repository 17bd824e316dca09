/**
 * YAML/JSON text that must be a mapping of name → value (vars, run-secrets),
 * from a CLI file or an action input. Errors name the source and, for a parse
 * error, the line — never the text: it may hold secrets.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { validateEnvName } from '../../domain/run-environment.js';

export function parseMapping(text: string, source: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    const line = (error as { linePos?: Array<{ line: number }> }).linePos?.[0]?.line;
    throw new UsageError(
      `${source} is not valid YAML/JSON${line === undefined ? '' : ` (line ${line})`}`,
      'give a mapping of name → value, one per line (name: value)',
    );
  }
  const parsed = z.record(z.string(), z.unknown()).safeParse(data ?? {});
  if (!parsed.success)
    throw new UsageError(`${source} must be a mapping of name → value`, 'write one name: value per line');
  return parsed.data;
}

/** run-secrets: environment name → value, each name a variable the play may receive. */
export function parseRunSecrets(text: string, source: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parseMapping(text, source))) {
    validateEnvName(name);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new UsageError(`run-secret ${name} must be a string, number or boolean`, `fix ${source}`);
    }
    out[name] = String(value);
  }
  return out;
}
