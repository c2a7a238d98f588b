import { createConnection } from "node:net";
import { CommandError, errorText } from "./errors.ts";
import {
  type ControlResponse,
  MAX_RESPONSE_BYTES,
  PROTOCOL_VERSION,
  parseResponse,
  readLine,
} from "./protocol.ts";

/** Nobody listens on the socket: no server, or one still starting or already gone. */
export class SocketUnavailableError extends CommandError {}

/** Long enough for any command on a busy server; a hung server must not hang the CLI. */
const ANSWER_TIMEOUT_MS = 60_000;

/** Sends one command to the running server and returns its answer. */
export function sendCommand(
  path: string,
  argv: string[],
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<ControlResponse> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let connected = false;
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () =>
      fail(
        new CommandError(
          `the server did not answer on its control socket ${path} within ${timeoutMs / 1000} s.`,
        ),
      ),
    );
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (connected) return; // readLine reports it
      const code = error.code ?? "";
      if (code === "ENOENT" || code === "ECONNREFUSED") {
        fail(new SocketUnavailableError(`nothing listens on the control socket ${path} (${code})`));
      } else {
        fail(new CommandError(`cannot connect to the server's control socket ${path}: ${errorText(error)}`));
      }
    });
    socket.once("connect", () => {
      connected = true;
      socket.write(`${JSON.stringify({ v: PROTOCOL_VERSION, argv })}\n`);
      readLine(socket, MAX_RESPONSE_BYTES).then(
        (line) => {
          socket.destroy();
          const response = parseResponse(line);
          if (response) resolve(response);
          else
            reject(
              new CommandError(
                line
                  ? `the server's answer on ${path} is not one the CLI understands.`
                  : `the server closed its control socket ${path} without an answer.`,
              ),
            );
        },
        (error: Error) => fail(new CommandError(`the control socket ${path} failed: ${errorText(error)}`)),
      );
    });
  });
}
