/** Entry point of the `exocomp` bundle. */
import { main } from './program.js';

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
