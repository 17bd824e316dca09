/**
 * GitHub Actions expressions (`${{ … }}` and `if:`), the part workflows and
 * composite actions here use: contexts (`secrets.X`, `inputs.x`,
 * `steps.id.outputs.x`, `needs.job.outputs.x`, `matrix.x`, `github.x`, …),
 * string/number/boolean/null literals, `==`, `!=`, `!`, `&&`, `||`, parentheses
 * and the status functions. Names may hold dashes (`inputs.workflow-id`), as in
 * GitHub. A context is a function so a caller can refuse a name (a secret the
 * docs do not name): reading it throws, and the run fails.
 */

export type ExpressionValue = string | number | boolean | null | { [key: string]: ExpressionValue } | ExpressionValue[];

/** A context: a value, or a lookup that may throw for a name it must not give. */
export type Context = ExpressionValue | ((name: string) => ExpressionValue);

export interface ExpressionScope {
  contexts: Record<string, Context>;
  /** The job's status so far, for success()/failure()/cancelled()/always(). */
  status?: 'success' | 'failure' | 'cancelled';
}

type Token =
  | { kind: 'op'; value: string }
  | { kind: 'name'; value: string }
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const two = text.slice(i, i + 2);
    if (['==', '!=', '&&', '||', '<=', '>='].includes(two)) {
      tokens.push({ kind: 'op', value: two });
      i += 2;
      continue;
    }
    if ('!().[],<>'.includes(c)) {
      tokens.push({ kind: 'op', value: c });
      i++;
      continue;
    }
    if (c === "'") {
      let value = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new Error(`unterminated string in expression ${JSON.stringify(text)}`);
        if (text[i] === "'" && text[i + 1] === "'") {
          value += "'";
          i += 2;
        } else if (text[i] === "'") {
          i++;
          break;
        } else value += text[i++];
      }
      tokens.push({ kind: 'string', value });
      continue;
    }
    const number = /^-?\d+(\.\d+)?/.exec(text.slice(i));
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i));
    if (!name) throw new Error(`cannot read expression ${JSON.stringify(text)} at ${JSON.stringify(text.slice(i))}`);
    tokens.push({ kind: 'name', value: name[0] });
    i += name[0].length;
  }
  return tokens;
}

function truthy(value: ExpressionValue): boolean {
  return !(value === null || value === false || value === 0 || value === '');
}

function asText(value: ExpressionValue): string {
  if (value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** GitHub's loose equality: strings compare case-insensitively; mixed types compare as numbers. */
function equal(a: ExpressionValue, b: ExpressionValue): boolean {
  if (typeof a === 'string' && typeof b === 'string') return a.toLowerCase() === b.toLowerCase();
  if (typeof a === typeof b) return a === b;
  const number = (v: ExpressionValue) =>
    v === null
      ? 0
      : typeof v === 'boolean'
        ? Number(v)
        : typeof v === 'string'
          ? v.trim() === ''
            ? 0
            : Number(v)
          : NaN;
  return number(a) === number(b);
}

class Parser {
  private position = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly scope: ExpressionScope,
    private readonly source: string,
  ) {}

  parse(): ExpressionValue {
    const value = this.or();
    if (this.position < this.tokens.length)
      throw new Error(`unexpected ${JSON.stringify(this.tokens[this.position])} in ${JSON.stringify(this.source)}`);
    return value;
  }

  private peek(value: string): boolean {
    const token = this.tokens[this.position];
    return token?.kind === 'op' && token.value === value;
  }

  private expect(value: string): void {
    if (!this.peek(value)) throw new Error(`expected ${value} in ${JSON.stringify(this.source)}`);
    this.position++;
  }

  private or(): ExpressionValue {
    let left = this.and();
    while (this.peek('||')) {
      this.position++;
      const right = this.and();
      left = truthy(left) ? left : right;
    }
    return left;
  }

  private and(): ExpressionValue {
    let left = this.comparison();
    while (this.peek('&&')) {
      this.position++;
      const right = this.comparison();
      left = truthy(left) ? right : left;
    }
    return left;
  }

  private comparison(): ExpressionValue {
    const left = this.unary();
    if (this.peek('==') || this.peek('!=')) {
      const op = (this.tokens[this.position++] as { value: string }).value;
      const right = this.unary();
      return op === '==' ? equal(left, right) : !equal(left, right);
    }
    return left;
  }

  private unary(): ExpressionValue {
    if (this.peek('!')) {
      this.position++;
      return !truthy(this.unary());
    }
    return this.primary();
  }

  private primary(): ExpressionValue {
    const token = this.tokens[this.position++];
    if (!token) throw new Error(`expression ${JSON.stringify(this.source)} ends too early`);
    if (token.kind === 'string' || token.kind === 'number') return token.value;
    if (token.kind === 'op') {
      if (token.value !== '(') throw new Error(`unexpected ${token.value} in ${JSON.stringify(this.source)}`);
      const value = this.or();
      this.expect(')');
      return value;
    }
    if (token.value === 'true') return true;
    if (token.value === 'false') return false;
    if (token.value === 'null') return null;
    if (this.peek('(')) return this.call(token.value);
    return this.path(token.value);
  }

  private call(name: string): ExpressionValue {
    this.expect('(');
    this.expect(')');
    const status = this.scope.status ?? 'success';
    switch (name) {
      case 'always':
        return true;
      case 'success':
        return status === 'success';
      case 'failure':
        return status === 'failure';
      case 'cancelled':
        return status === 'cancelled';
      default:
        throw new Error(`the emulation does not implement ${name}() (in ${JSON.stringify(this.source)})`);
    }
  }

  private path(root: string): ExpressionValue {
    if (!(root in this.scope.contexts)) throw new Error(`unknown context ${root} in ${JSON.stringify(this.source)}`);
    const context = this.scope.contexts[root]!;
    const names: string[] = [];
    for (;;) {
      if (this.peek('.')) {
        this.position++;
        const name = this.tokens[this.position++];
        if (name?.kind !== 'name') throw new Error(`expected a name after . in ${JSON.stringify(this.source)}`);
        names.push(name.value);
      } else if (this.peek('[')) {
        this.position++;
        names.push(asText(this.or()));
        this.expect(']');
      } else break;
    }
    let value: ExpressionValue;
    let rest = names;
    if (typeof context === 'function') {
      if (names.length === 0)
        throw new Error(`the emulation cannot give the whole ${root} context (in ${JSON.stringify(this.source)})`);
      value = context(names[0]!);
      rest = names.slice(1);
    } else value = context;
    for (const name of rest) {
      if (value === null || typeof value !== 'object') return null;
      value = (value as Record<string, ExpressionValue>)[name] ?? null;
    }
    return value;
  }
}

/** The value of one expression (the text inside `${{ }}`, or an `if:`). */
export function evaluate(expression: string, scope: ExpressionScope): ExpressionValue {
  return new Parser(tokenize(expression), scope, expression).parse();
}

/** A string with every `${{ … }}` replaced by its value as text. */
export function interpolate(text: string, scope: ExpressionScope): string {
  return text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_match, expression: string) =>
    asText(evaluate(expression.trim(), scope)),
  );
}

/** An `if:` condition: a bare expression or one wrapped in `${{ }}`; without a status function, `success() &&` is implied. */
export function condition(text: string | boolean | undefined, scope: ExpressionScope): boolean {
  if (text === undefined) return (scope.status ?? 'success') === 'success';
  if (typeof text === 'boolean') return text && (scope.status ?? 'success') === 'success';
  const bare = /^\s*\$\{\{([\s\S]*)\}\}\s*$/.exec(text)?.[1] ?? text;
  const usesStatus = /\b(always|success|failure|cancelled)\s*\(/.test(bare);
  const value = truthy(evaluate(bare.trim(), scope));
  return usesStatus ? value : value && (scope.status ?? 'success') === 'success';
}
