/**
 * Every secret value a run knows (keys, run-secrets, the seal key, sensitive
 * outputs). Anything that leaves the process — a log line, an error, a ledger
 * record — is passed through `redact` first, which matches each secret in every
 * form tools print it (src/domain/redaction.ts). The GitHub entry point
 * registers each form with the runner's masking as it is added.
 */
import { containsAnyForm, redactForms, secretForms } from '../../domain/redaction.js';

export class SecretRegistry {
  private readonly secrets = new Set<string>();
  private readonly forms = new Set<string>();
  private sorted: string[] = [];

  constructor(private readonly onAdd: (value: string) => void = () => undefined) {}

  add(...values: Array<string | undefined>): void {
    let added = false;
    for (const value of values) {
      if (value === undefined || value.length === 0 || this.secrets.has(value)) continue;
      this.secrets.add(value);
      for (const form of secretForms(value)) {
        if (this.forms.has(form)) continue;
        this.forms.add(form);
        this.onAdd(form);
        added = true;
      }
    }
    // Longest first so a form containing another is replaced whole.
    if (added) this.sorted = [...this.forms].sort((a, b) => b.length - a.length);
  }

  /** Every form of every secret, longest first: what adapters redact from tool output. */
  list(): string[] {
    return this.sorted;
  }

  redact(text: string): string {
    return redactForms(text, this.sorted);
  }

  /** Whether `text` holds any secret in any form. */
  exposes(text: string): boolean {
    return containsAnyForm(text, this.sorted);
  }
}
