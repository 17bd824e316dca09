/**
 * Property tests (fast-check): whatever the input, the inventory parser, the
 * name and id validators and the cron converter either return or throw their
 * typed error (ExocompError) — never a TypeError, a RangeError or anything else.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertCron } from '../../src/domain/cron.js';
import { ExocompError } from '../../src/domain/errors.js';
import { captureInventory, deriveHosts, parseInventory, renderAnsibleInventory } from '../../src/domain/inventory.js';
import {
  parseInventoryRef,
  parseUserName,
  parseWorkflowId,
  parseWorkspaceName,
  workflowIdProblem,
} from '../../src/domain/names.js';

/** Runs `fn`; true when it returned or threw an ExocompError. */
function typedOutcome(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (error) {
    if (error instanceof ExocompError) return true;
    throw error;
  }
}

const RUNS = { numRuns: 400 };

/** Names that look like what inventories hold, and some that do not. */
const name = fc.oneof(
  fc.constantFrom(
    'all',
    'web',
    'db',
    'web1',
    '10.0.0.1',
    'children',
    'hosts',
    'vars',
    '__proto__',
    'constructor',
    '',
    'a b',
    'x:22',
    '{{ x }}',
  ),
  fc.string({ maxLength: 12 }),
);
const scalar = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const connectionVar = fc.constantFrom(
  'ansible_host',
  'ansible_port',
  'ansible_user',
  'ansible_connection',
  'ansible_python_interpreter',
  'ansible_become',
  'ansible_become_user',
  'ansible_become_method',
  'ansible_group_priority',
  'ansible_ssh_host',
  'ansible_ssh_executable',
  'ansible_ssh_common_args',
  'motd',
);
const vars = fc.dictionary(
  fc.oneof(connectionVar, name),
  fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(name, scalar, { maxKeys: 3 })),
  { maxKeys: 5 },
);
const { group } = fc.letrec<{ group: unknown }>((tie) => ({
  group: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    scalar,
    fc.record(
      {
        hosts: fc.oneof(
          fc.dictionary(name, fc.oneof(vars, fc.constant(null), scalar), { maxKeys: 4 }),
          fc.array(name, { maxLength: 2 }),
          fc.constant(null),
        ),
        vars: fc.oneof(vars, fc.constant(null), fc.array(scalar, { maxLength: 2 })),
        children: fc.oneof(
          fc.dictionary(name, tie('group'), { maxKeys: 3 }),
          fc.array(name, { maxLength: 2 }),
          fc.constant(null),
        ),
      },
      { requiredKeys: [] },
    ),
  ),
}));
/** Mostly well-formed inventories, so the host derivation is exercised as well as the refusals. */
const hostName = fc.stringMatching(/^[a-z][a-z0-9.-]{0,10}$/);
const wellFormed = fc.record({
  all: fc.record({
    hosts: fc.dictionary(hostName, fc.oneof(vars, fc.constant(null)), { minKeys: 1, maxKeys: 4 }),
    vars,
    children: fc.dictionary(hostName, fc.record({ hosts: fc.dictionary(hostName, vars, { maxKeys: 2 }), vars }), {
      maxKeys: 2,
    }),
  }),
});
const inventory = fc.oneof(wellFormed, fc.dictionary(name, group, { maxKeys: 4 }), group, fc.anything());

describe('properties', () => {
  it('parseInventory, deriveHosts and renderAnsibleInventory only ever throw the typed error', () => {
    fc.assert(
      fc.property(inventory, (value) =>
        typedOutcome(() => {
          const parsed = parseInventory(value);
          deriveHosts(parsed);
          renderAnsibleInventory(parsed);
        }),
      ),
      RUNS,
    );
  });

  it('captureInventory only ever throws the typed error, whatever the outputs', () => {
    const output = fc.record({ value: fc.oneof(inventory, fc.anything()), sensitive: fc.boolean() });
    fc.assert(
      fc.property(fc.dictionary(fc.oneof(fc.constant('ansible_inventory'), name), output, { maxKeys: 3 }), (outputs) =>
        typedOutcome(() => captureInventory(outputs)),
      ),
      RUNS,
    );
  });

  it('every string value reaches ansible tagged !unsafe, and the file is printable ASCII', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('motd', 'tags', 'note'), fc.string({ unit: 'binary', maxLength: 30 }), {
          minKeys: 1,
          maxKeys: 3,
        }),
        (hostVars) => {
          const text = renderAnsibleInventory({ all: { hosts: { web: hostVars } } });
          expect(text).toMatch(/^[\x20-\x7e\n]*$/);
          expect(text.match(/!unsafe "/g)?.length).toBe(Object.keys(hostVars).length);
        },
      ),
      RUNS,
    );
  });

  it('the name and id validators only ever throw the typed error, and accept exactly what they say', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,70}$/),
      fc.constantFrom('..', '.git', '-rf', 'a/b', 'ABC', ''),
    );
    fc.assert(
      fc.property(text, (raw) => {
        for (const parse of [
          parseWorkflowId,
          parseWorkspaceName,
          (v: string) => parseUserName(v, '--remote-user'),
          parseInventoryRef,
        ]) {
          expect(typedOutcome(() => parse(raw))).toBe(true);
        }
        // An accepted id is always a safe single path component.
        if (workflowIdProblem(raw) === undefined) {
          expect(raw.length).toBeLessThanOrEqual(64);
          expect(raw).not.toMatch(/\/|\\|^\.|\.\.|\s|\.$/);
        }
      }),
      RUNS,
    );
  });

  it('convertCron only ever throws the typed error', () => {
    const field = fc.oneof(
      fc.constantFrom(
        '*',
        '?',
        '0',
        '*/5',
        '1-5',
        'MON-FRI',
        'JAN',
        '31',
        '30',
        '29',
        '2',
        '0-59/7',
        '5,35',
        '*/0',
        'L',
        '1-2-3',
        '',
      ),
      fc.stringMatching(/^[0-9*/,A-Za-z?-]{1,8}$/),
    );
    const cron = fc.oneof(
      fc.tuple(fc.constantFrom('0', '00', '30'), field, field, field, field, field).map((parts) => parts.join(' ')),
      fc.string({ unit: 'binary', maxLength: 40 }),
    );
    fc.assert(
      fc.property(cron, (raw) => typedOutcome(() => convertCron(raw))),
      { numRuns: 1000 },
    );
  });
});
