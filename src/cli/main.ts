/** Entry point of the `exocomp` bundle. */
import { main } from './program.js';

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
