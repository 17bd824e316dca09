/** @actions/attest, a bundle of its own: main loads it only when the job attests its apply (src/platform/github/attest.ts). */
export { attest } from '@actions/attest';
