/**
 * The runner's processing of workflow commands in a step's output, after
 * actions/runner (src/Runner.Common/ActionCommand.cs, src/Runner.Worker/
 * ActionCommandManager.cs): each line of stdout and stderr (ended by \n,
 * \r\n or a lone \r, as ProcessInvoker's ReadLine reads it) is tried as
 * `::name props::data` (after trimming leading whitespace) and as the legacy
 * `##[name props]data` (anywhere in the line); only registered names count,
 * case-insensitively. `stop-commands` suspends all processing until a line
 * names its token; `add-mask` masks every later line; annotations, outputs and
 * state are collected. What is not a command is the log, masked.
 */

export type AnnotationLevel = 'error' | 'warning' | 'notice';

export interface Annotation {
  level: AnnotationLevel;
  message: string;
  properties: Record<string, string>;
}

const REGISTERED = [
  'set-env',
  'set-output',
  'save-state',
  'add-mask',
  'add-path',
  'add-matcher',
  'remove-matcher',
  'warning',
  'error',
  'notice',
  'debug',
  'group',
  'endgroup',
  'echo',
];
const STOP = 'stop-commands';
/** What the runner shows in place of a masked value. */
const MASKED = '***';

interface Command {
  name: string;
  properties: Record<string, string>;
  data: string;
}

const unescapeData = (s: string) => s.replace(/%0D/gi, '\r').replace(/%0A/gi, '\n').replace(/%25/g, '%');
const unescapeProperty = (s: string) => unescapeData(s.replace(/%3A/gi, ':').replace(/%2C/gi, ','));
const unescapeLegacy = (s: string) => unescapeData(s.replace(/%3B/gi, ';').replace(/%5D/gi, ']'));

/** `::name k=v,k=v::data` after leading whitespace (TryParseV2). */
function parseV2(line: string, registered: Set<string>): Command | undefined {
  const message = line.trimStart();
  if (!message.startsWith('::')) return undefined;
  const end = message.indexOf('::', 2);
  if (end < 0) return undefined;
  const info = message.slice(2, end);
  const space = info.indexOf(' ');
  const name = (space < 0 ? info : info.slice(0, space)).toLowerCase();
  if (!registered.has(name)) return undefined;
  const properties: Record<string, string> = {};
  if (space > 0) {
    for (const pair of info
      .slice(space + 1)
      .trim()
      .split(',')
      .filter(Boolean)) {
      const eq = pair.indexOf('=');
      if (eq > 0 && eq < pair.length - 1) properties[pair.slice(0, eq)] = unescapeProperty(pair.slice(eq + 1));
    }
  }
  return { name, properties, data: unescapeData(message.slice(end + 2)) };
}

/** `##[name k=v;k=v]data` anywhere in the line (the legacy TryParse). */
function parseLegacy(line: string, registered: Set<string>): Command | undefined {
  const prefix = line.indexOf('##[');
  if (prefix < 0) return undefined;
  const close = line.indexOf(']', prefix);
  if (close < 0) return undefined;
  const info = line.slice(prefix + 3, close);
  const space = info.indexOf(' ');
  const name = (space < 0 ? info : info.slice(0, space)).toLowerCase();
  if (!registered.has(name)) return undefined;
  const properties: Record<string, string> = {};
  if (space > 0) {
    for (const pair of info
      .slice(space + 1)
      .split(';')
      .filter(Boolean)) {
      const eq = pair.indexOf('=');
      if (eq > 0 && eq < pair.length - 1) properties[pair.slice(0, eq)] = unescapeLegacy(pair.slice(eq + 1));
    }
  }
  return { name, properties, data: unescapeLegacy(line.slice(close + 1)) };
}

export class WorkflowCommandProcessor {
  readonly annotations: Annotation[] = [];
  /** Values registered with add-mask, in order. */
  readonly masks: string[] = [];
  /** Outputs set with the deprecated `::set-output`. */
  readonly outputs: Record<string, string> = {};
  /** State saved with the deprecated `::save-state`. */
  readonly state: Record<string, string> = {};
  private readonly lines: string[] = [];
  private readonly registered = new Set([...REGISTERED, STOP]);
  private stopToken: string | undefined;
  private readonly pending: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };

  constructor(private readonly debug = false) {}

  /**
   * Feeds a chunk of a stream; complete lines are processed as they arrive. A
   * line ends at \n, \r\n or a lone \r, as .NET's StreamReader.ReadLine (the
   * runner's ProcessInvoker) reads it; a \r at the end of a chunk waits for
   * the next one, which may begin with the \n of a \r\n.
   */
  write(stream: 'stdout' | 'stderr', chunk: string): void {
    const text = this.pending[stream] + chunk;
    const parts = text.split(/\r\n|\r(?!$)|\n/);
    this.pending[stream] = parts.pop() ?? '';
    for (const part of parts) this.line(part);
  }

  /** Processes what is left of each stream (a last line without its newline). */
  end(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.pending[stream] !== '') this.line(this.pending[stream].replace(/\r$/, ''));
      this.pending[stream] = '';
    }
  }

  /** The log as the runner shows it: commands consumed, annotations as `##[level]`, masks applied. */
  get log(): string {
    return this.lines.join('\n');
  }

  /** Adds an annotation the runner itself raises (e.g. an undeclared input). */
  runnerWarning(message: string): void {
    this.annotations.push({ level: 'warning', message, properties: {} });
    this.output(`##[warning]${message}`);
  }

  private line(line: string): void {
    const command = line === '' ? undefined : (parseV2(line, this.registered) ?? parseLegacy(line, this.registered));
    if (this.stopToken !== undefined) {
      if (command && command.name === this.stopToken.toLowerCase()) {
        this.registered.delete(command.name);
        this.stopToken = undefined;
        this.output(line);
        return;
      }
      this.output(line);
      return;
    }
    if (!command) {
      this.output(line);
      return;
    }
    switch (command.name) {
      case STOP:
        this.output(line);
        this.stopToken = command.data;
        this.registered.add(command.data.toLowerCase());
        return;
      case 'add-mask':
        if (command.data.trim() === '')
          this.runnerWarning("Can't add secret mask for empty string in ##[add-mask] command.");
        else this.masks.push(command.data);
        return;
      case 'set-output':
        if (!command.properties.name)
          return this.runnerError("Required field 'name' is missing in ##[set-output] command.");
        this.outputs[command.properties.name] = command.data;
        return;
      case 'save-state':
        if (!command.properties.name)
          return this.runnerError("Required field 'name' is missing in ##[save-state] command.");
        this.state[command.properties.name] = command.data;
        return;
      case 'error':
      case 'warning':
      case 'notice':
        this.annotations.push({ level: command.name, message: command.data, properties: command.properties });
        this.output(`##[${command.name}]${command.data}`);
        return;
      case 'group':
        this.output(`##[group]${command.data}`);
        return;
      case 'endgroup':
        this.output('##[endgroup]');
        return;
      case 'debug':
        if (this.debug) this.output(`##[debug]${command.data}`);
        return;
      case 'set-env':
      case 'add-path':
        return this.runnerError(`The \`${command.name}\` command is disabled.`);
      default:
        // echo, add-matcher, remove-matcher: consumed, nothing shown.
        return;
    }
  }

  private runnerError(message: string): void {
    this.annotations.push({ level: 'error', message, properties: {} });
    this.output(`##[error]${message}`);
  }

  private output(line: string): void {
    let masked = line;
    for (const value of this.masks) masked = masked.split(value).join(MASKED);
    this.lines.push(masked);
  }
}
