/**
 * The route suite (route-suite.ts) on the process runtime: same routes, same assertions, bubblewrap
 * process trees instead of simulated sandboxes.
 */
import { routeSuite } from "./route-suite.ts";

await routeSuite("process");
