/** Loaded by ./main.ts only when the main step left a step remembered: the ledger, the API and the status. */
export { runPostStep } from '../../platform/github/post-step.js';
