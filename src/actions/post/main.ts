/** The post step of the actions that run chain steps: records a step the main step was stopped in before it could. */
import { runPostStep } from '../../platform/github/post-step.js';

await runPostStep();
