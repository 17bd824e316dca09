/**
 * Text that a GitHub Actions runner never takes for a workflow command. The
 * runner reads a step's stdout and stderr line by line (a line ends at `\n`,
 * `\r\n` or `\r`) and runs a line as a command when, after leading
 * whitespace, it starts with `::` (`::error::…`, `::add-mask::…`) or when it
 * holds the legacy `##[` anywhere (`##[warning]…`). Making each line inert on
 * its own needs no state shared between stdout and stderr, which the runner
 * reads separately (a `stop-commands` block on one stream can end while the
 * other is mid-line), and adds no line that would change captured output.
 */

/** Breaks the two-character prefixes without changing what a person reads. */
const ZERO_WIDTH_SPACE = '\u200b';

/** `text` (one or more lines) with every line inert: a zero-width space between the colons of a leading `::` and inside every `##[`. */
export function inertLines(text: string): string {
  return text
    .split(/(\r\n|\r|\n)/)
    .map((part) => (part === '\r\n' || part === '\r' || part === '\n' ? part : inertLine(part)))
    .join('');
}

function inertLine(line: string): string {
  return line.replace(/^(\s*):(?=:)/, `$1:${ZERO_WIDTH_SPACE}`).replace(/#(?=#\[)/g, `#${ZERO_WIDTH_SPACE}`);
}

/**
 * A line of JSON made inert without changing its meaning: `#` can only occur
 * inside JSON strings, where `\u0023` is the same character to any parser;
 * a JSON line never starts with `::`.
 */
export function inertJson(json: string): string {
  return inertLines(json.replaceAll('#', '\\u0023'));
}
