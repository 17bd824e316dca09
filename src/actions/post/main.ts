/**
 * The post step of the actions that run chain steps: records a step the main step was stopped in before it could
 * (src/platform/github/post-step.ts). It runs after every job, so with no step remembered (STATE_<STATE_KEY> of
 * src/platform/github/running-step.ts) it ends before loading the rest, a bundle of its own.
 */
if ((process.env.STATE_exocompRunningStep ?? '') !== '') await (await import('./record.js')).runPostStep();
