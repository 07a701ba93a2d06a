/**
 * Prints the cluster image's plan as JSON (src/sandbox/stream/cluster-image.ts): its tag, content
 * hash, base image, the harness folder and the node_modules folders to copy, and its command.
 * scripts/build-sandbox-image.sh builds the image from it, so the build and the daemon name the
 * same tag. `SANDBOX_IMAGE` overrides the base image, as it does for that script.
 */
import { clusterImagePlan } from "../src/sandbox/stream/cluster-image.ts";

process.stdout.write(`${JSON.stringify(clusterImagePlan(process.env.SANDBOX_IMAGE || undefined))}\n`);
