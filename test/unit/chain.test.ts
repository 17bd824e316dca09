import { describe, expect, it } from 'vitest';
import { runChain } from '../../src/app/provision/chain.js';
import type { StepAction, StepContext } from '../../src/app/provision/steps/step.js';
import type { ResolvedInventory } from '../../src/domain/standing-inventory.js';
import { LookAhead } from '../../src/app/provision/look-ahead.js';
import type { ScannedHostKeys } from '../../src/app/hosts/pins.js';
import type { Holder } from '../../src/app/runtime/lease.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { ExocompError, InterruptedError } from '../../src/domain/errors.js';
import {
  LeaseHeldError,
  startStep,
  STEP_NAMES,
  stepOf,
  type StepName,
  type Workflow,
} from '../../src/domain/workflow.js';
import { sampleWorkflow } from '../support/workflows.js';
import { LEDGER_PATHS, RecordWrites, requireWorkflow, serializeRecord } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore } from '../../src/ledger/store.js';

const t0 = new Date('2026-11-30T00:00:00Z');

function setup(workflow?: Workflow) {
  const w = workflow ?? sampleWorkflow('edge-1');
  const store = new MemoryLedgerStore({ files: { [LEDGER_PATHS.workflow(w.id)]: serializeRecord(w) } });
  const progress = new RecordingProgress();
  const app: AppContext = {
    store,
    ledgerBranch: 'exocomp-ledger',
    now: () => t0,
    cwd: '/nonexistent',
    env: {},
    progress,
  };
  const secrets = new SecretRegistry();
  secrets.add('hunter2-secret-value');
  return { store, progress, app, inputs: { runSecrets: {}, rotateHostKeys: [], secrets }, id: w.id };
}

function holder(id: string): Holder {
  return {
    id,
    lease: (now) => ({
      holder: id,
      origin: { kind: 'local', hostname: 'h', pid: 1 },
      acquiredAt: now.toISOString(),
      heartbeatAt: now.toISOString(),
      ttlMs: 60_000,
    }),
  };
}

function steps(calls: string[], behaviour: Partial<Record<string, StepAction>> = {}): Record<StepName, StepAction> {
  const step =
    (name: StepName): StepAction =>
    async (context) => {
      calls.push(name);
      // Write-ahead: when a step runs, the ledger already says it is running under our lease.
      const recorded = stepOf(requireWorkflow(await context.app.store.read(), context.workflow.id), name);
      expect(recorded.state).toBe('running');
      return (await behaviour[name]?.(context)) ?? `${name} done`;
    };
  return Object.fromEntries(STEP_NAMES.map((name) => [name, step(name)])) as Record<StepName, StepAction>;
}

describe('chain runner', () => {
  it('runs the four steps in order and records each', async () => {
    const { app, inputs, id, store } = setup();
    const calls: string[] = [];
    const result = await runChain(app, id, inputs, { holder: holder('a'), steps: steps(calls) });
    expect(result.ok).toBe(true);
    expect(calls).toEqual(['apply', 'ssh-wait', 'onboard', 'configure']);
    expect(result.workflow.state).toBe('provisioned');
    // One write between two steps: a step's success starts the next one.
    expect(store.history().map((c) => c.message)).toEqual([
      'initial content',
      'edge-1: apply running (a)',
      'edge-1: apply succeeded; ssh-wait running (a)',
      'edge-1: ssh-wait succeeded; onboard running (a)',
      'edge-1: onboard succeeded; configure running (a)',
      'edge-1: configure succeeded',
    ]);
  });

  it('records a step hands back are written in its success commit, and nowhere for a step whose lease was taken', async () => {
    const { app, inputs, id, store } = setup();
    const capture = () => ({
      writes: new RecordWrites().inventoryFile('edge', 'hosts: {}\n'),
      message: 'tf:edge: capture',
    });
    await runChain(app, id, inputs, {
      holder: holder('a'),
      steps: steps([], { apply: async () => ({ detail: 'applied', records: capture }) }),
    });
    expect(store.history().map((c) => c.message)[2]).toBe(
      'edge-1: apply succeeded; ssh-wait running (a); tf:edge: capture',
    );
    expect((await store.read()).read(LEDGER_PATHS.inventoryFile('edge'))).toBe('hosts: {}\n');

    const lost = setup();
    const takenOver = steps([], {
      apply: async ({ signal }) => {
        await lost.store.update((snapshot) => {
          const next = startStep(requireWorkflow(snapshot, lost.id), 'apply', holder('b').lease(t0), t0, {
            holderGone: true,
          });
          return {
            writes: new Map([[LEDGER_PATHS.workflow(lost.id), serializeRecord(next)]]),
            message: 'taken',
            result: undefined,
          };
        });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        return { detail: 'applied anyway', records: capture };
      },
    });
    await expect(
      runChain(lost.app, lost.id, lost.inputs, { holder: holder('a'), steps: takenOver, heartbeatMs: 50 }),
    ).rejects.toMatchObject({ kind: 'lease-held' });
    expect((await lost.store.read()).read(LEDGER_PATHS.inventoryFile('edge'))).toBeUndefined();
  });

  it('the inventory a step hands back reaches the later steps of the same run, only after its success was written', async () => {
    const { app, inputs, id, store } = setup();
    const seen: Record<string, string | undefined> = {};
    // Says how many commits the ledger held when a step took it: apply's success must be one of them.
    const inventory = () => ({ name: `taken after ${store.history().length} commits` }) as unknown as ResolvedInventory;
    const look = (name: StepName) => async (context: StepContext) => {
      seen[name] = context.handedOn.inventory?.().name;
      return `${name} done`;
    };
    await runChain(app, id, inputs, {
      holder: holder('a'),
      steps: steps([], {
        apply: async (context) => (await look('apply')(context), { detail: 'applied', handOn: { inventory } }),
        'ssh-wait': look('ssh-wait'),
        onboard: look('onboard'),
        configure: look('configure'),
      }),
    });
    expect(seen).toEqual({
      apply: undefined,
      'ssh-wait': 'taken after 3 commits',
      onboard: 'taken after 4 commits',
      configure: 'taken after 5 commits',
    });
    expect(store.history()[2]?.message).toBe('edge-1: apply succeeded; ssh-wait running (a)');

    // A run that starts after apply (a resume, a per-step job) has none: its steps read the ledger.
    const later = setup();
    const resumed: (string | undefined)[] = [];
    const only = steps([], {
      'ssh-wait': async (context) => (resumed.push(context.handedOn.inventory?.().name), 'waited'),
    });
    await runChain(later.app, later.id, later.inputs, {
      holder: holder('a'),
      steps: { ...only, apply: async () => ({ detail: 'applied', handOn: { inventory } }) },
      only: 'apply',
    });
    await runChain(later.app, later.id, later.inputs, { holder: holder('a'), steps: only, only: 'ssh-wait' });
    expect(resumed).toEqual([undefined]);
  });

  it('host keys handed on are stopped when no later step of the run takes them, and left alone once taken', async () => {
    const scans: string[] = [];
    const keysLookAhead = () =>
      new LookAhead(
        (_say, signal) =>
          new Promise<ScannedHostKeys>((resolve) => {
            scans.push('scanning');
            signal.addEventListener('abort', () => (scans.push('stopped'), resolve(new Map())));
            setTimeout(() => resolve(new Map()), 50);
          }),
        async () => undefined,
      );
    const waited = async () => ({ detail: 'waited', handOn: { hostKeys: keysLookAhead() } });

    const alone = setup();
    await runChain(alone.app, alone.id, alone.inputs, {
      holder: holder('a'),
      steps: steps([], { 'ssh-wait': waited }),
      only: 'apply',
    });
    await runChain(alone.app, alone.id, alone.inputs, {
      holder: holder('a'),
      steps: steps([], { 'ssh-wait': waited }),
      only: 'ssh-wait',
    });
    expect(scans).toEqual(['scanning', 'stopped']);

    scans.length = 0;
    const whole = setup();
    const taken: number[] = [];
    const onboard = async (context: StepContext) => (
      taken.push((await context.handedOn.hostKeys!.take({ info: () => undefined, warn: () => undefined })).size),
      'onboarded'
    );
    await runChain(whole.app, whole.id, whole.inputs, {
      holder: holder('a'),
      steps: steps([], { 'ssh-wait': waited, onboard }),
    });
    expect(taken).toEqual([0]);
    expect(scans).toEqual(['scanning']);
  });

  it('what a step leaves closing is awaited once its outcome is written and before the next step; failing to close is a warning', async () => {
    const { app, inputs, id, store, progress } = setup();
    const order: string[] = [];
    // Settles only once the ledger holds apply's success (bounded): the chain must not wait for it before writing.
    const closesAfterTheWrite = async () => {
      for (let i = 0; i < 200 && store.history().length < 3; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      order.push(`closed with ${store.history().length} commits`);
    };
    const result = await runChain(app, id, inputs, {
      holder: holder('a'),
      steps: steps([], {
        apply: async (context) => (context.deferClose(closesAfterTheWrite()), 'applied'),
        'ssh-wait': async () => (order.push('ssh-wait ran'), 'waited'),
        configure: async (context) => (
          context.deferClose(Promise.reject(new Error('rm: busy; hunter2-secret-value'))),
          'configured'
        ),
      }),
    });
    expect(order).toEqual(['closed with 3 commits', 'ssh-wait ran']);
    expect(result.ok).toBe(true);
    // Redacted like every line of the run.
    expect(progress.events).toContainEqual({
      type: 'warning',
      message: 'configure left something open: rm: busy; ***',
      step: 'configure',
    });
  });

  it('a per-step run records its success alone and starts nothing after it', async () => {
    const { app, inputs, id, store } = setup();
    const calls: string[] = [];
    const result = await runChain(app, id, inputs, { holder: holder('a'), steps: steps(calls), only: 'apply' });
    expect(result.ok).toBe(true);
    expect(calls).toEqual(['apply']);
    expect(result.workflow.steps.map((s) => s.state)).toEqual(['succeeded', 'pending', 'pending', 'pending']);
    expect(store.history().map((c) => c.message)).toEqual([
      'initial content',
      'edge-1: apply running (a)',
      'edge-1: apply succeeded',
    ]);
  });

  it('interrupted as a step succeeds: the success is recorded alone, and the next step is neither started nor run', async () => {
    const { app, inputs, id } = setup();
    const interrupt = new AbortController();
    const calls: string[] = [];
    const interrupted = steps(calls, {
      apply: async () => {
        interrupt.abort(new InterruptedError('SIGTERM', undefined));
        return 'applied';
      },
    });
    const result = await runChain({ ...app, interrupt: interrupt.signal }, id, inputs, {
      holder: holder('a'),
      steps: interrupted,
    });
    expect(result.ok).toBe(false);
    expect(calls).toEqual(['apply']);
    expect(result.workflow.steps.map((s) => s.state)).toEqual(['succeeded', 'pending', 'pending', 'pending']);
  });

  it('a step its predecessor started, interrupted before it began, is recorded as interrupted and not run', async () => {
    const { app, inputs, id, progress } = setup();
    const interrupt = new AbortController();
    // The interruption arrives right after the write that recorded apply's success and started ssh-wait.
    const listener = {
      emit: (event: Parameters<RecordingProgress['emit']>[0]) => {
        progress.emit(event);
        if (event.type === 'step-succeeded') interrupt.abort(new InterruptedError('SIGINT', 'SIGINT'));
      },
    };
    const calls: string[] = [];
    const result = await runChain({ ...app, progress: listener, interrupt: interrupt.signal }, id, inputs, {
      holder: holder('a'),
      steps: steps(calls),
    });
    expect(result.ok).toBe(false);
    expect(calls).toEqual(['apply']);
    expect(result.workflow.steps.map((s) => s.state)).toEqual(['succeeded', 'failed', 'blocked', 'blocked']);
    expect(result.workflow.failure).toMatchObject({
      step: 'ssh-wait',
      kind: 'interrupted',
      summary: 'ssh-wait interrupted by SIGINT before it began',
    });
    expect(stepOf(result.workflow, 'ssh-wait').lease).toBeUndefined();
  });

  it('a failure blocks the rest, records the failure context without secrets, and resume continues from it', async () => {
    const { app, inputs, id } = setup();
    const calls: string[] = [];
    const failing = steps(calls, {
      'ssh-wait': async () => {
        throw new ExocompError('ssh-wait', 'web2 never answered; token hunter2-secret-value');
      },
    });
    const first = await runChain(app, id, inputs, { holder: holder('a'), steps: failing });
    expect(first.ok).toBe(false);
    expect(first.workflow.steps.map((s) => s.state)).toEqual(['succeeded', 'failed', 'blocked', 'blocked']);
    expect(first.workflow.failure).toMatchObject({ step: 'ssh-wait', kind: 'ssh-wait' });
    expect(first.workflow.failure?.summary).not.toContain('hunter2');
    const again: string[] = [];
    const second = await runChain(app, id, inputs, { holder: holder('b'), steps: steps(again) });
    expect(second.ok).toBe(true);
    expect(again).toEqual(['ssh-wait', 'onboard', 'configure']);
    expect(stepOf(second.workflow, 'ssh-wait').attempts).toBe(2);
    expect(stepOf(second.workflow, 'apply').attempts).toBe(1);
  });

  it('re-arms a step whose holder is gone, and refuses one whose holder is alive', async () => {
    const base = sampleWorkflow('edge-2');
    const crashed = startStep(base, 'apply', holder('dead').lease(t0), t0);
    const live = setup(crashed);
    await expect(
      runChain(live.app, 'edge-2', live.inputs, { holder: holder('b'), steps: steps([]), probe: async () => false }),
    ).rejects.toBeInstanceOf(LeaseHeldError);
    const calls: string[] = [];
    const result = await runChain(live.app, 'edge-2', live.inputs, {
      holder: holder('b'),
      steps: steps(calls),
      probe: async () => true,
    });
    expect(result.ok).toBe(true);
    expect(calls[0]).toBe('apply');
    expect(stepOf(result.workflow, 'apply').attempts).toBe(2);
  });

  it('reports progress per step', async () => {
    const { app, inputs, id, progress } = setup();
    await runChain(app, id, inputs, { holder: holder('a'), steps: steps([]) });
    expect(
      progress.events.filter((e) => e.type === 'step-succeeded').map((e) => (e as { index: number }).index),
    ).toEqual([1, 2, 3, 4]);
  });

  it('stops a step whose lease another runner took, and records nothing for it', async () => {
    const { app, inputs, id, store } = setup();
    const calls: string[] = [];
    let seenBy: { aborted: boolean; reason: unknown } | undefined;
    const takenOver = steps(calls, {
      apply: async ({ signal }) => {
        // Runner b judged this one gone and re-armed the step.
        await store.update((snapshot) => {
          const next = startStep(requireWorkflow(snapshot, id), 'apply', holder('b').lease(t0), t0, {
            holderGone: true,
          });
          return {
            writes: new Map([[LEDGER_PATHS.workflow(id), serializeRecord(next)]]),
            message: `${id}: apply running (b)`,
            result: undefined,
          };
        });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        seenBy = { aborted: signal.aborted, reason: signal.reason };
        return 'applied anyway';
      },
    });
    const commitsBefore = store.history().length;
    const error = await runChain(app, id, inputs, { holder: holder('a'), steps: takenOver, heartbeatMs: 50 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExocompError);
    expect(error).toMatchObject({ kind: 'lease-held' });
    expect((error as Error).message).toBe(
      `lost the lease of step apply of ${id} to b: this runner stopped the step and records nothing`,
    );
    expect(seenBy).toEqual({ aborted: true, reason: error });
    expect(calls).toEqual(['apply']);
    const apply = stepOf(requireWorkflow(await store.read(), id), 'apply');
    expect(apply).toMatchObject({ state: 'running', attempts: 2, lease: { holder: 'b' } });
    // The takeover is the last commit: the loser wrote nothing after it.
    expect(
      store
        .history()
        .slice(commitsBefore)
        .map((c) => c.message),
    ).toEqual([`${id}: apply running (a)`, `${id}: apply running (b)`]);
  });

  it('a CI holder commits no heartbeats, but still stops when its step is taken over', async () => {
    const ci = (id: string): Holder => ({
      id,
      lease: (now) => ({
        holder: id,
        origin: { kind: 'ci', platform: 'github', repository: 'o/r', runId: 7, runAttempt: 1 },
        acquiredAt: now.toISOString(),
        heartbeatAt: now.toISOString(),
        ttlMs: 60_000,
      }),
    });
    const slow =
      (ms: number): StepAction =>
      () =>
        new Promise((resolve) => setTimeout(() => resolve('done'), ms));
    const local = setup();
    // A moving clock, so that each heartbeat changes the record.
    await runChain({ ...local.app, now: () => new Date() }, local.id, local.inputs, {
      holder: holder('a'),
      steps: { ...steps([]), apply: slow(300) },
      heartbeatMs: 50,
    });
    expect(local.store.history().filter((c) => c.message.endsWith('apply heartbeat')).length).toBeGreaterThan(0);

    const { app, inputs, id, store } = setup();
    await runChain({ ...app, now: () => new Date() }, id, inputs, {
      holder: ci('github:o/r:7:1:job'),
      steps: { ...steps([]), apply: slow(300) },
      heartbeatMs: 50,
    });
    expect(store.history().filter((c) => c.message.includes('heartbeat'))).toEqual([]);

    const taken = setup();
    const error = await runChain(taken.app, taken.id, taken.inputs, {
      holder: ci('github:o/r:7:1:job'),
      heartbeatMs: 50,
      steps: {
        ...steps([]),
        apply: async ({ signal }) => {
          await taken.store.update((snapshot) => {
            const next = startStep(requireWorkflow(snapshot, taken.id), 'apply', holder('b').lease(t0), t0, {
              holderGone: true,
            });
            return {
              writes: new Map([[LEDGER_PATHS.workflow(taken.id), serializeRecord(next)]]),
              message: 'taken over',
              result: undefined,
            };
          });
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return 'applied anyway';
        },
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: 'lease-held' });
    expect(taken.store.history().at(-1)?.message).toBe('taken over');
  });

  it('keeps running through a heartbeat that cannot reach the ledger, with a warning', async () => {
    const { app, inputs, id, store, progress } = setup();
    const flaky = new FlakyStore(store);
    const result = await runChain({ ...app, store: flaky }, id, inputs, {
      holder: holder('a'),
      heartbeatMs: 50,
      steps: steps([], {
        apply: async ({ signal }) => {
          flaky.failNext = true;
          await flaky.nextUpdate(); // the heartbeat that fails
          await flaky.nextUpdate(); // the one after it, so the failure was handled
          expect(signal.aborted).toBe(false);
          return 'applied';
        },
      }),
    });
    expect(result.ok).toBe(true);
    expect(stepOf(result.workflow, 'apply')).toMatchObject({ state: 'succeeded', detail: 'applied' });
    const warnings = progress.events.filter((e) => e.type === 'warning').map((e) => (e as { message: string }).message);
    expect(warnings).toEqual([expect.stringContaining('heartbeat failed: ledger unreachable')]);
  });
});

/** A store whose next update fails as an unreachable ledger would, when asked to. */
class FlakyStore implements LedgerStore {
  readonly description = 'flaky in-memory ledger';
  failNext = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly inner: LedgerStore) {}

  read(): Promise<LedgerSnapshot> {
    return this.inner.read();
  }

  migrate(): Promise<number> {
    return this.inner.migrate();
  }

  /** Resolves when the next update is called. */
  nextUpdate(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<T> {
    const waiters = this.waiters;
    this.waiters = [];
    waiters.forEach((wake) => wake());
    if (this.failNext) {
      this.failNext = false;
      throw new ExocompError('ledger-unreachable', 'ledger unreachable: connection refused');
    }
    return this.inner.update(mutate);
  }
}
