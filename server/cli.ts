import { runCli } from "./control/run.ts";

// `kontor keys list | head -1`: a reader that went away is no failure worth a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
process.exitCode = await runCli(process.argv.slice(2));
