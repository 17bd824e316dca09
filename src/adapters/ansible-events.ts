/**
 * Structured task results from ansible-playbook. The default callback's text is
 * for people; this small callback plugin (ours, enabled beside the stdout
 * callback) writes one JSON line per play, task and host result to a file the
 * adapter names, so callers read per-host status, messages and diffs without
 * parsing prose. Diffs are rendered by ansible's own CallbackBase._get_diff, so
 * they read exactly as `--diff` prints them. Results of `no_log` tasks reach
 * callbacks already censored by ansible.
 */
import { z } from 'zod';
import { redact } from './process.js';

export const EVENTS_CALLBACK_NAME = 'exocomp_events';
/** The file the plugin appends to; set by the adapter for each run. */
export const EVENTS_FILE_ENV = 'EXOCOMP_ANSIBLE_EVENTS';

export const EVENTS_CALLBACK_SOURCE = `# Written by exocomp for one ansible-playbook run; see src/adapters/ansible-events.ts.
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = '''
name: ${EVENTS_CALLBACK_NAME}
type: aggregate
short_description: task results as JSON lines for exocomp
description: Appends one JSON object per play, task and host result to the file named by ${EVENTS_FILE_ENV}.
'''

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = '${EVENTS_CALLBACK_NAME}'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        path = os.environ.get('${EVENTS_FILE_ENV}')
        self._out = open(path, 'a', encoding='utf-8') if path else None

    def _emit(self, event):
        if self._out is not None:
            self._out.write(json.dumps(event, default=str, sort_keys=True) + '\\n')
            self._out.flush()

    def v2_playbook_on_play_start(self, play):
        self._emit({'event': 'play', 'play': play.get_name().strip()})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._emit({'event': 'task', 'task': task.get_name().strip(), 'action': task.action})

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

const resultEventSchema = z.object({
  event: z.literal('result'),
  status: z.enum(['ok', 'changed', 'failed', 'unreachable', 'skipped']),
  host: z.string(),
  task: z.string(),
  action: z.string(),
  msg: z.string().optional(),
  diff: z.string().optional(),
  ignored: z.boolean().optional(),
});

export const ansibleEventSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('play'), play: z.string() }),
  z.object({ event: z.literal('task'), task: z.string(), action: z.string(), handler: z.boolean().optional() }),
  resultEventSchema,
  z.object({ event: z.literal('stats'), hosts: z.record(z.string(), z.record(z.string(), z.number())) }),
]);

export type AnsibleEvent = z.infer<typeof ansibleEventSchema>;
export type TaskResultEvent = z.infer<typeof resultEventSchema>;

/**
 * Reads the plugin's JSON lines, redacting every string first. A line that is
 * cut short (ansible killed mid-write) or of an unknown shape is skipped: the
 * exit code and the recap still tell the caller the run did not complete.
 */
export function parseAnsibleEvents(text: string, secrets: readonly string[] = []): AnsibleEvent[] {
  const events: AnsibleEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = ansibleEventSchema.safeParse(redactStrings(data, secrets));
    if (parsed.success) events.push(parsed.data);
  }
  return events;
}

function redactStrings(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return redact(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k, secrets), redactStrings(v, secrets)]));
  }
  return value;
}
