/**
 * Every secret value a run knows (keys, run-secrets, the seal key, sensitive
 * outputs). Anything that leaves the process — a log line, an error, a ledger
 * record — is passed through `redact` first. The GitHub entry point registers
 * each value with the runner's masking as it is added.
 */
import { redact } from '../adapters/process.js';

export class SecretRegistry {
  private readonly values = new Set<string>();

  constructor(private readonly onAdd: (value: string) => void = () => undefined) {}

  add(...values: Array<string | undefined>): void {
    for (const value of values) {
      if (value === undefined || value.length === 0 || this.values.has(value)) continue;
      this.values.add(value);
      this.onAdd(value);
      // A multi-line secret (a private key) may surface one line at a time.
      for (const line of value.split(/\r?\n/)) {
        const trimmed = line.trim();
        if (trimmed.length >= 8 && !this.values.has(trimmed) && !/^-----(BEGIN|END) /.test(trimmed)) {
          this.values.add(trimmed);
          this.onAdd(trimmed);
        }
      }
    }
  }

  list(): string[] {
    // Longest first so a secret containing another is replaced whole.
    return [...this.values].sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    return redact(text, this.list());
  }
}
