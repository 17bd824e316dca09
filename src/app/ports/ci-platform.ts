/**
 * The CI-platform port: only what differs between GitHub Actions and GitLab
 * CI. A CI face implements it once (src/platform/<name>/) and calls the use
 * cases in src/app; every decision (approval, which plan is applied, when the
 * chain runs) stays in the core. See docs/architecture.md.
 */
import type { Trigger, Workflow } from '../../domain/workflow.js';
import type { Holder, HolderProbe } from '../runtime/lease.js';

/** The run (GitHub workflow run / GitLab pipeline job) this process executes in. */
export interface CiRun {
  /** Numeric id of the run; recorded in the ledger (e.g. where a sealed plan was uploaded). */
  id: number;
  /** The attempt of the run, where the platform re-runs a run in attempts (GitHub); names the plan artifact it uploads. */
  attempt?: number;
  /** A link a person can open. */
  url: string;
  /** Who started this run (on a re-run, who re-ran it): the requester of a workflow it creates. */
  actor: string;
  /** The pull/merge request the run is about, when any. */
  changeRequest: number | undefined;
  /** What a workflow created here records as its trigger. */
  trigger: Trigger;
  /** How an approval decided in this run is recorded: e.g. `workflow_dispatch run 42`. */
  decisionVia: string;
  /** How a person starts a new workflow here (a new pipeline or run, not a retry of this one), as a sentence. */
  startAgain?: string;
  /** How a person plans again after this run's plan failed (the job to retry), as a sentence. */
  retryPlan?: string;
}

/** Log lines and collapsible groups in the job log. Messages are already redacted. */
export interface CiLog {
  info(message: string): void;
  /** An annotation a person should see without opening the log. */
  notice(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  startGroup(title: string): void;
  endGroup(): void;
}

/** Who approved the gated job this run executes in (a protected environment, a manual job). */
export interface GateApproval {
  by: string;
  /** Where the decision was made, recorded in the ledger: e.g. `environment production (run 42)`. */
  via: string;
  comment: string;
  /**
   * Whether the gate's own settings let a person approve a run they started,
   * unjudged (GitHub: the environment's `prevent_self_review` is off); false
   * when the platform judged self-approval itself (GitLab's allow-self-approval).
   */
  selfReviewAllowed: boolean;
  /**
   * Who started the attempt the gate held, when the platform says (GitHub: the
   * triggering actor of a re-run). The self-approval rule applies to them as
   * well as to the workflow's requester, and a gate without self-review kept
   * out only them: GitHub blocks whoever triggered the attempt, so after
   * someone else re-ran it the requester could approve their own plan.
   */
  attemptActor?: string;
}

/** Calls a job makes that never fail it (src/app/runtime/optional-call.ts). */
export type OptionalIntegration = 'status-comment' | 'change-request-lookup' | 'drift-issue' | 'liveness-lookup';

export type StatusCommentOutcome =
  /** `url`: the comment's web page, where the platform gives it. */
  { kind: 'created' | 'updated'; id: number; url?: string } | { kind: 'refused'; reason: string };

/** Files kept with a run, for a later job or run (the sealed plan). */
export interface ArtifactPort {
  /** Uploads one file as an artifact of this run, named after the file. */
  upload(file: string): Promise<void>;
  /** Downloads artifact `name` of run `runId` (this run or an earlier one) into `dir`; its path, or undefined when there is none. */
  download(name: string, runId: number, dir: string): Promise<string | undefined>;
}

/** What dispatchContinuation started. */
export interface StartedContinuation {
  /** The workflow file or pipeline started, for messages. */
  target: string;
  ref: string;
  /** The run it started, when the platform says (GitHub with `return_run_details`; GitHub Enterprise Server may not). */
  run?: { id: number; url: string };
}

export interface CiPlatform {
  /** 'github', 'gitlab': for messages. */
  readonly name: string;
  readonly run: CiRun;
  readonly log: CiLog;

  /** The raw text of an input ('' when not given). Entries mask secret inputs with maskSecret before parsing them. */
  input(name: string): string;
  /** Keeps a value out of every log line from now on. */
  maskSecret(value: string): void;
  /** A named output of the job (step outputs on GitHub, a dotenv report on GitLab). */
  setOutput(name: string, value: string): void;
  /** Appends markdown to the run's summary page. */
  writeSummary(markdown: string): Promise<void>;
  /**
   * Creates or edits in place the one status comment `key` on pull/merge
   * request `changeRequest`. A token that may not comment is a `refused`
   * outcome, never an error.
   */
  upsertStatusComment(changeRequest: number, key: string, body: string): Promise<StatusCommentOutcome>;
  /**
   * The pull/merge request a run that names none reports to (a push: the
   * request whose head is the pushed commit). Optional: a failure is a notice.
   */
  readonly findChangeRequest?: () => Promise<number | undefined>;
  /** What to grant so an optional integration works, for the notice when it is refused or unreachable. */
  readonly grants?: Partial<Record<OptionalIntegration, string>>;

  /** Plan upload/download; only the jobs that move plans load it (it is large), so it is optional. */
  readonly artifacts?: ArtifactPort;

  /**
   * Who approved this gated job (`gate`: the environment name); throws an
   * `approval` ExocompError when nobody did or the gate cannot approve
   * anything (no reviewers configured). Used by the environment gate.
   */
  gatedJobApproval(gate: string | undefined): Promise<GateApproval>;
  /** Whether `actor` may decide approvals in this project (write access or above); `reason` says why not, e.g. `bob has read access to o/r`. */
  mayDecide(actor: string): Promise<{ allowed: boolean; reason: string }>;
  /**
   * What dispatchContinuation would start for `workflow`: the workflow file or
   * pipeline and the ref. `target` overrides the file recorded in its trigger.
   * Undefined when there is nothing to start (GitHub: neither names a file).
   */
  continuationTarget(workflow: Workflow, target: string | undefined): { target: string; ref: string } | undefined;
  /**
   * Starts the run that continues `workflow` (dispatch-mode approval, the
   * resume sweeper), as continuationTarget says; a `usage` ExocompError when
   * there is nothing to start. Returns what was started.
   */
  dispatchContinuation(workflow: Workflow, target: string | undefined): Promise<StartedContinuation>;
  /**
   * Whether run `runId` of this project (a continuation it started) is over:
   * true once it completed, however it ended; false while it is queued,
   * waiting or in progress; undefined when that cannot be told. Absent where
   * the platform cannot say: continuations are then judged by their age.
   */
  readonly continuationRunEnded?: (runId: number) => Promise<boolean | undefined>;

  /** The lease holder for steps this job runs. */
  holder(): Holder;
  /** Judges whether another lease holder (a CI run, or a local process here) is gone. */
  readonly probeHolder: HolderProbe;
}
