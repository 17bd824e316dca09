/**
 * Structured task results from ansible-playbook, as they happen. The default
 * callback's text is for people; this small callback plugin (ours, enabled
 * beside the stdout callback) writes one JSON line per play, task and host
 * result to file descriptor 3 of ansible-playbook, a pipe the adapter reads
 * while the play runs, so callers show progress and read per-host status,
 * messages, output and diffs without parsing prose (schema: domain/play-events.ts). Diffs are rendered by ansible's own CallbackBase._get_diff, so
 * they read exactly as `--diff` prints them. Results of `no_log` tasks reach
 * callbacks already censored by ansible.
 */
import { ansibleEventSchema, type AnsibleEvent } from '../domain/play-events.js';
import { redact } from './process.js';

export type { AnsibleEvent, TaskResultEvent } from '../domain/play-events.js';

export const EVENTS_CALLBACK_NAME = 'exocomp_events';
/** Names the file descriptor the plugin writes to; the adapter opens it as a pipe. */
export const EVENTS_FD_ENV = 'EXOCOMP_ANSIBLE_EVENTS_FD';
/** A failure's stdout and stderr are kept up to this many characters each. */
const OUTPUT_LIMIT = 4000;

export const EVENTS_CALLBACK_SOURCE = `# Written by exocomp for one ansible-playbook run; see src/adapters/ansible-events.ts.
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = '''
name: ${EVENTS_CALLBACK_NAME}
type: aggregate
short_description: task results as JSON lines for exocomp
description: Writes one JSON object per play, task and host result to the file descriptor named by ${EVENTS_FD_ENV}.
'''

import json
import os
import time

from ansible.playbook.block import Block
from ansible.plugins.callback import CallbackBase


def _count_tasks(blocks):
    count = 0
    for block in blocks:
        for item in block.block:
            if isinstance(item, Block):
                count += _count_tasks([item])
            elif getattr(item, 'action', None) not in ('meta', 'ansible.builtin.meta'):
                count += 1
    return count


def _text(value):
    if value is None or value == '':
        return None
    if not isinstance(value, str):
        value = json.dumps(value, default=str)
    return value[:${OUTPUT_LIMIT}]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = '${EVENTS_CALLBACK_NAME}'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        fd = os.environ.get('${EVENTS_FD_ENV}')
        self._out = os.fdopen(int(fd), 'w', encoding='utf-8', closefd=False) if fd else None
        self._started = time.monotonic()
        self._index = 0
        self._total = 0

    def _emit(self, event):
        if self._out is None:
            return
        event['elapsedMs'] = int((time.monotonic() - self._started) * 1000)
        try:
            self._out.write(json.dumps(event, default=str, sort_keys=True) + '\\n')
            self._out.flush()
        except (OSError, ValueError):
            self._out = None

    def _is_meta(self, task):
        return task.action in ('meta', 'ansible.builtin.meta')

    def v2_playbook_on_play_start(self, play):
        self._index = 0
        try:
            self._total = _count_tasks(play.compile())
        except Exception:  # the count is a courtesy; never fail a play for it
            self._total = 0
        self._emit({'event': 'play', 'play': play.get_name().strip(), 'tasks': self._total})

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._is_meta(task):
            return
        self._index += 1
        self._total = max(self._total, self._index)
        self._emit({'event': 'task', 'task': task.get_name().strip(), 'action': task.action, 'index': self._index, 'total': self._total})

    def v2_playbook_on_handler_task_start(self, task):
        self._emit({'event': 'task', 'task': task.get_name().strip(), 'action': task.action, 'handler': True})

    def _diff_of(self, result):
        res = result._result
        texts = []
        if result._task.loop and 'results' in res:
            for item in res['results']:
                if isinstance(item, dict) and item.get('diff') and item.get('changed', False):
                    texts.append(self._get_diff(item['diff']))
        elif res.get('diff') and res.get('changed', False):
            texts.append(self._get_diff(res['diff']))
        return ''.join(t for t in texts if t)

    def _result(self, status, result, **extra):
        if self._is_meta(result._task):
            return
        res = result._result
        event = {
            'event': 'result',
            'status': status,
            'host': result._host.get_name(),
            'task': result._task.get_name().strip(),
            'action': result._task.action,
        }
        if status in ('failed', 'unreachable'):
            msg = res.get('msg') or res.get('stderr') or res.get('module_stderr') or ''
            event['msg'] = msg if isinstance(msg, str) else json.dumps(msg, default=str)
            for key in ('stderr', 'stdout'):
                text = _text(res.get(key))
                if text:
                    event[key] = text
            if isinstance(res.get('rc'), int):
                event['rc'] = res['rc']
        event['index'] = self._index
        event['total'] = self._total
        diff = self._diff_of(result)
        if diff:
            event['diff'] = diff
        event.update(extra)
        self._emit(event)

    def v2_runner_on_ok(self, result):
        self._result('changed' if result._result.get('changed', False) else 'ok', result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result('failed', result, ignored=bool(ignore_errors))

    def v2_runner_on_unreachable(self, result):
        self._result('unreachable', result)

    def v2_runner_on_skipped(self, result):
        self._result('skipped', result)

    def v2_playbook_on_stats(self, stats):
        self._emit({'event': 'stats', 'hosts': {h: stats.summarize(h) for h in sorted(stats.processed.keys())}})
        if self._out is not None:
            self._out.close()
            self._out = None
`;

/**
 * Reads the plugin's JSON lines, redacting every string first. A line that is
 * cut short (ansible killed mid-write) or of an unknown shape is skipped: the
 * exit code and the recap still tell the caller the run did not complete.
 */
export function parseAnsibleEvents(text: string, secrets: readonly string[] = []): AnsibleEvent[] {
  return text.split('\n').flatMap((line) => {
    const event = parseEventLine(line, secrets);
    return event ? [event] : [];
  });
}

function parseEventLine(line: string, secrets: readonly string[]): AnsibleEvent | undefined {
  if (line.trim() === '') return undefined;
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = ansibleEventSchema.safeParse(redactStrings(data, secrets));
  return parsed.success ? parsed.data : undefined;
}

/** Reads the pipe as it fills: whole lines become events (redacted), handed on at once. */
export class AnsibleEventStream {
  readonly events: AnsibleEvent[] = [];
  private pending = '';

  constructor(
    private readonly secrets: readonly string[],
    private readonly onEvent?: (event: AnsibleEvent) => void,
  ) {}

  push(chunk: string): void {
    const lines = (this.pending + chunk).split('\n');
    this.pending = lines.pop() ?? '';
    for (const line of lines) this.take(line);
  }

  end(): void {
    this.take(this.pending);
    this.pending = '';
  }

  private take(line: string): void {
    const event = parseEventLine(line, this.secrets);
    if (!event) return;
    this.events.push(event);
    this.onEvent?.(event);
  }
}

function redactStrings(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return redact(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k, secrets), redactStrings(v, secrets)]));
  }
  return value;
}
