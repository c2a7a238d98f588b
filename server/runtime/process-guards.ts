import { describeError, log } from "../observability/log.ts";

/**
 * The last line of defence: an exception nothing caught (an 'error' event without a listener on
 * some socket, a throw in a timer) is logged and the process goes on serving the other requests,
 * instead of ending every connection it holds. Causes found this way are bugs to fix at their root;
 * each one is logged at error level with its stack so it can be.
 */
export function installProcessGuards(): void {
  process.on("uncaughtException", (error, origin) => {
    log("error", "uncaught exception: the process carries on", { origin, ...describeError(error) });
  });
  process.on("unhandledRejection", (reason) => {
    log("error", "unhandled promise rejection: the process carries on", describeError(reason));
  });
}
