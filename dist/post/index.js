import { createRequire as __exocompCreateRequire } from 'node:module';
const require = __exocompCreateRequire(import.meta.url);
(process.env.STATE_exocompRunningStep??"")!==""&&await(await import("./record.js")).runPostStep();
