/**
 * The forms in which tools print a secret: raw, JSON-escaped (as JavaScript and
 * as Python's json.dumps print it, once or twice), Python-repr, shell-quoted, URL-encoded and
 * base64 (at each of the three byte alignments it can have inside a longer
 * encoded text). A multi-line secret is matched whole and line by line. Every
 * sink redacts all of them.
 */

/** Shorter forms would hide ordinary text and reveal next to nothing. */
const MIN_FORM_LENGTH = 4;
/** Lines of a multi-line secret shorter than this are too common to redact on their own. */
const MIN_LINE_LENGTH = 8;
/** Base64 fragments at an offset lose up to three characters at each end; shorter ones match noise. */
const MIN_BASE64_FRAGMENT = 8;

/** The text inside JSON quotes, as JSON.stringify and Python's json.dumps (ensure_ascii) print it. */
function jsonForms(value: string): string[] {
  const js = JSON.stringify(value).slice(1, -1);
  const ascii = js.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  // Twice: a JSON document quoted inside another (ansible's result inside a --json event).
  const twice = JSON.stringify(js).slice(1, -1);
  // Some encoders also escape '/'.
  return [js, ascii, twice, js.replaceAll('/', '\\/')];
}

/** The text inside the quotes of Python's repr() of a str, for either quote it may choose. */
function pythonReprForms(value: string): string[] {
  const escape = (quote: string) =>
    [...value]
      .map((char) => {
        if (char === '\\') return '\\\\';
        if (char === quote) return `\\${quote}`;
        if (char === '\n') return '\\n';
        if (char === '\r') return '\\r';
        if (char === '\t') return '\\t';
        const code = char.codePointAt(0) as number;
        if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
        return char;
      })
      .join('');
  return [escape("'"), escape('"')];
}

/** The forms a shell quoting of the value contains: '…'\''…', shlex's '…'"'"'…', "…" and printf %q. */
function shellForms(value: string): string[] {
  return [
    value.replaceAll("'", "'\\''"),
    value.replaceAll("'", `'"'"'`),
    value.replace(/["\\$`]/g, (char) => `\\${char}`),
    value.replace(/[^A-Za-z0-9_./,:@%+=-]/g, (char) => (char === '\n' ? "$'\\n'" : `\\${char}`)),
  ];
}

/** encodeURIComponent, RFC 3986 strict, form encoding (+), Python's quote (keeps '/'), in upper- and lower-case hex. */
function urlForms(value: string): string[] {
  const component = encodeURIComponent(value);
  const strict = component.replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  const forms = [
    component,
    strict,
    strict.replaceAll('%20', '+'),
    strict.replaceAll('%2F', '/'),
    component.replaceAll('%20', '+'),
  ];
  return [...forms, ...forms.map((form) => form.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()))];
}

/**
 * Base64 of the value as it appears inside a longer encoded text: for each
 * alignment (0, 1 or 2 bytes before it), only the characters that depend on the
 * value's bytes alone. Standard and URL-safe alphabets, with and without padding.
 */
function base64Forms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms: string[] = [bytes.toString('base64'), bytes.toString('base64url')];
  for (const offset of [0, 1, 2]) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = padded.toString('base64');
    const skip = offset === 0 ? 0 : offset === 1 ? 2 : 3;
    const fullGroups = Math.floor(padded.length / 3);
    const fragment = encoded.slice(skip, fullGroups * 4);
    if (fragment.length >= MIN_BASE64_FRAGMENT)
      forms.push(fragment, fragment.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

function formsOfOne(value: string): string[] {
  const quoted = [...pythonReprForms(value), ...shellForms(value)];
  // A quoted form printed inside JSON (ansible's result of `{{ [secret] | string }}` or `{{ secret | quote }}`).
  const quotedInJson = quoted.map((form) => JSON.stringify(form).slice(1, -1));
  return [value, ...jsonForms(value), ...quoted, ...quotedInJson, ...urlForms(value), ...base64Forms(value)];
}

/** Every form of `secret` (and of each line of a multi-line one) worth matching, longest first. */
export function secretForms(secret: string): string[] {
  if (secret.length === 0) return [];
  const values = new Set<string>([secret]);
  if (secret.includes('\r\n')) values.add(secret.replaceAll('\r\n', '\n'));
  for (const line of secret.split(/\r?\n/)) {
    const trimmed = line.trim();
    // PEM armour lines are public knowledge; hiding them would only hide that a key was printed.
    if (trimmed.length >= MIN_LINE_LENGTH && !/^-----(BEGIN|END) /.test(trimmed)) values.add(trimmed);
  }
  const forms = new Set<string>();
  for (const value of values) {
    for (const form of formsOfOne(value)) if (form.length >= MIN_FORM_LENGTH) forms.add(form);
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

export const REDACTED = '***';

/** Replaces every occurrence of each form (pass them longest first) with ***. */
export function redactForms(text: string, forms: readonly string[]): string {
  let out = text;
  for (const form of forms) {
    if (form.length >= MIN_FORM_LENGTH && out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
}

/** Whether `text` holds any of the forms. */
export function containsAnyForm(text: string, forms: readonly string[]): boolean {
  return forms.some((form) => form.length >= MIN_FORM_LENGTH && text.includes(form));
}
