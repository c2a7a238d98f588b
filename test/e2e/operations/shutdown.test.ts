/**
 * The graceful drain on SIGTERM (server/runtime/drain.ts, server/main.ts, server/runtime/cluster.ts): `server/main.ts`
 * in its own process, with chat completions held in flight by a fake provider on loopback. After
 * the signal, requests in flight finish with their whole answer and `Connection: close`, a new
 * connection is refused, and the process exits 0 once drained; a request that never finishes is
 * cut at KONTOR_SHUTDOWN_TIMEOUT_MS; a second signal forces the exit; a cluster's primary waits
 * for its draining workers and restarts none of them. Nothing here sleeps: every wait is for an
 * event (the provider receiving a request, a byte of the answer, a log line, a socket's close, the
 * process's exit).
 */
import type { ChildProcess } from "node:child_process";
import http from "node:http";
import net from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../server/runtime/config.ts";
import { freePort, spawnMain } from "../../support/child-server.ts";
import {
  completion,
  type FakeRequest,
  type Gate,
  gate,
  type Handler,
  startFakeOpenAI,
  stream,
} from "../../support/fake-openai.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

const STACK_TRACE = /^\s+at .+[(:]/m;

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

type Scratch = Awaited<ReturnType<typeof provisionStack>>;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when it exited. */
  at: number;
}

type LogLine = Record<string, any>;

/** A server process: `server/main.ts` as `npm start` runs it, in its own process group. */
interface Proc {
  child: ChildProcess;
  port: number;
  exited: Promise<Exit>;
  stderr(): string;
  logs(): LogLine[];
  /** Resolves with the first log line (already written or still to come; from the `from`-th on) that `match` accepts. */
  line(
    match: (line: LogLine) => boolean,
    what: string,
    options?: { timeoutMs?: number; from?: number },
  ): Promise<LogLine>;
  /** `promise`, or a failure naming `what` (with the server's stderr) after `timeoutMs`. */
  within<T>(promise: Promise<T>, what: string, timeoutMs?: number): Promise<T>;
}

const running = new Set<ChildProcess>();

function killGroup(child: ChildProcess) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Kills what a failed test left running, workers included. */
function killAll() {
  for (const child of running) killGroup(child);
  running.clear();
}
afterAll(killAll);

function parseLines(text: string): LogLine[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return [];
      }
    });
}

function spawnServer(env: NodeJS.ProcessEnv, port: number): Proc {
  const main = spawnMain({
    KONTOR_LOG: "info",
    KONTOR_ACCESS_LOG: "off",
    KONTOR_ENV: "development",
    ...env,
    PORT: String(port),
  });
  const { child } = main;
  running.add(child);
  const watchers = new Set<() => void>();
  const wake = () => {
    for (const watcher of [...watchers]) watcher();
  };
  // spawnMain's own listener has appended the chunk by the time this one runs
  child.stderr!.on("data", wake);
  const exited = main.exited.then((exit) => {
    running.delete(child);
    wake();
    return { ...exit, at: performance.now() };
  });
  const logs = () => parseLines(main.stderr());
  return {
    child,
    port,
    exited,
    stderr: main.stderr,
    logs,
    async within(promise, what, timeoutMs = 30_000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`timed out after ${timeoutMs} ms waiting for ${what}; stderr:\n${main.stderr()}`),
            ),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([promise, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    line(match, what, { timeoutMs = 60_000, from = 0 } = {}) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => finish(new Error(`no log line ${what} within ${timeoutMs} ms; stderr:\n${main.stderr()}`)),
          timeoutMs,
        );
        const check = () => {
          const found = logs().slice(from).find(match);
          if (found) return finish(undefined, found);
          if (child.exitCode !== null || child.signalCode !== null)
            finish(
              new Error(
                `the server exited (${child.exitCode ?? child.signalCode}) before the log line ${what}; stderr:\n${main.stderr()}`,
              ),
            );
        };
        function finish(error: Error | undefined, found?: LogLine) {
          clearTimeout(timer);
          watchers.delete(check);
          if (error) reject(error);
          else resolve(found!);
        }
        watchers.add(check);
        check();
      });
    },
  };
}

/** A server started on `scratch` and serving (`Kontor listening` written), with a max-plan key holding every scope. */
async function startServer(scratch: Scratch, env: NodeJS.ProcessEnv = {}) {
  const tenant = await tenantIn(scratch.env, "Shutdown");
  const server = spawnServer(
    { ...scratch.env, AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-fake", ...env },
    await freePort(),
  );
  await server.line((l) => l.msg === "Kontor listening", "Kontor listening", { timeoutMs: 120_000 });
  return { server, key: tenant.key };
}

/** A promise with its resolver and rejecter. */
function signal<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A rejection nobody awaited yet is the test's failure when awaited, not an unhandled one.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** Queues `handler` for the provider's next request, resolving `received` with it on its arrival. */
function nextUpstream(handler: Handler) {
  const received = signal<FakeRequest>();
  fake.next((request, res) => {
    received.resolve(request);
    return handler(request, res);
  });
  return received.promise;
}

/** The provider's receipt of `exchange`'s request; a failure with Kontor's answer if that comes first. */
function reaching(upstream: Promise<FakeRequest>, exchange: Exchange): Promise<FakeRequest> {
  const answered = exchange.done.then(async ({ text }): Promise<never> => {
    throw new Error(`answered ${(await exchange.head).statusCode} before reaching the provider: ${text}`);
  });
  answered.catch(() => {});
  return Promise.race([upstream, answered]);
}

/** A completion answered only once `held` opens. */
const heldCompletion =
  (held: Gate, text: string): Handler =>
  async (request, res) => {
    await Promise.race([held.promise, request.settled]);
    if (!request.aborted) completion({ text })(request, res);
  };

interface Exchange {
  /** The response's head. */
  head: Promise<http.IncomingMessage>;
  /** The first bytes of the body. */
  firstBytes: Promise<void>;
  /** The whole body, and whether it arrived complete (false: the connection closed before its end). */
  done: Promise<{ text: string; complete: boolean }>;
  /** The client's socket closed. */
  socketClosed: Promise<void>;
}

/** POST /v1/chat/completions on a keep-alive connection of its own (so `Connection: close` can only come from the server). */
function chat(port: number, key: string, body: Record<string, unknown>): Exchange {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const head = signal<http.IncomingMessage>();
  const firstBytes = signal();
  const done = signal<{ text: string; complete: boolean }>();
  const socketClosed = signal();
  const failed = (error: Error) => {
    head.reject(error);
    firstBytes.reject(error);
    done.reject(error);
  };
  const req = http.request(
    {
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/v1/chat/completions",
      agent,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    },
    (res) => {
      head.resolve(res);
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        firstBytes.resolve();
      });
      res.on("error", () => {}); // "aborted": seen through `complete` below
      res.on("close", () => done.resolve({ text, complete: res.complete }));
    },
  );
  req.on("socket", (socket) => socket.once("close", () => socketClosed.resolve()));
  req.on("error", failed);
  req.end(JSON.stringify(body));
  return {
    head: head.promise,
    firstBytes: firstBytes.promise,
    done: done.promise,
    socketClosed: socketClosed.promise,
  };
}

/** The content of an SSE chat-completion stream, and whether it ended with `[DONE]` and no error event. */
function streamed(text: string): { content: string; finished: boolean; errors: unknown[] } {
  const events = text
    .split("\n\n")
    .map((event) => event.trim())
    .filter(Boolean)
    .map((event) => event.replace(/^data: /, ""));
  const finished = events.at(-1) === "[DONE]";
  const chunks = events.filter((event) => event !== "[DONE]").map((event) => JSON.parse(event));
  return {
    content: chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join(""),
    finished,
    errors: chunks.filter((chunk) => chunk.error),
  };
}

/** Resolves with the error code of a TCP connection attempt to `port` (or "connected"). */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** An idle keep-alive connection: one request answered on it, then left open. */
async function idleConnection(port: number, key: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const closed = signal();
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, path: "/v1/workspace", agent, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("socket", (socket) => socket.once("close", () => closed.resolve()));
    req.on("error", reject);
    req.end();
  });
  return { status, closed: closed.promise, agent };
}

const DELTAS = ["The ", "drain ", "lets ", "this ", "stream ", "finish."];
const streamBody = {
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "Say something long." }],
  stream: true,
};
const jsonBody = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello." }] };

for (const stack of stacks()) {
  describe(`graceful shutdown [${stack}]`, () => {
    let scratch: Scratch | undefined;
    afterEach(async () => {
      killAll();
      await scratch?.drop();
      scratch = undefined;
    });

    it("SIGTERM: requests in flight finish with their whole answer and Connection: close, new connections are refused, exit 0 once drained", {
      timeout: 120_000,
    }, async () => {
      scratch = await provisionStack(stack);
      const BOUND_MS = 60_000;
      const { server, key } = await startServer(scratch, { KONTOR_SHUTDOWN_TIMEOUT_MS: String(BOUND_MS) });
      const idle = await idleConnection(server.port, key);
      expect(idle.status).toBe(200);

      // A stream whose head and first events left before the signal: it is held after two events.
      const streamGate = gate();
      const streamUpstream = nextUpstream(stream({ deltas: DELTAS, holdAfter: 2, gate: streamGate.promise }));
      const streaming = chat(server.port, key, streamBody);
      await server.within(
        reaching(streamUpstream, streaming),
        "the provider to receive the streamed request",
      );
      await server.within(streaming.firstBytes, "the first bytes of the stream");
      expect((await streaming.head).headers.connection).toBe("keep-alive");

      // A JSON completion whose head has not left: the provider holds its whole answer.
      const jsonGate = gate();
      const jsonUpstream = nextUpstream(heldCompletion(jsonGate, "Answered during the drain."));
      const plain = chat(server.port, key, jsonBody);
      await server.within(reaching(jsonUpstream, plain), "the provider to receive the JSON request");

      server.child.kill("SIGTERM");
      const started = await server.line((l) => l.msg === "shutting down", "shutting down");
      expect(started).toMatchObject({ level: "info", signal: "SIGTERM", in_flight: 2, timeout_ms: BOUND_MS });

      // The listener is closed, and the idle keep-alive connection with it.
      expect(await connectOutcome(server.port)).toBe("ECONNREFUSED");
      await server.within(idle.closed, "the idle keep-alive connection to close");
      // Still draining: nothing has finished, and the process waits.
      expect(server.child.exitCode).toBeNull();

      jsonGate.open();
      const plainHead = await server.within(plain.head, "the JSON answer's head");
      const plainBody = await server.within(plain.done, "the JSON answer's end");
      expect(plainHead.statusCode).toBe(200);
      expect(plainHead.headers.connection).toBe("close");
      expect(plainBody.complete).toBe(true);
      expect(JSON.parse(plainBody.text)).toMatchObject({
        object: "chat.completion",
        choices: [{ message: { role: "assistant", content: "Answered during the drain." } }],
      });
      await server.within(plain.socketClosed, "the JSON answer's connection to close");
      expect(server.child.exitCode, "one request is still in flight").toBeNull();

      const released = performance.now();
      streamGate.open();
      const streamBodyText = await server.within(streaming.done, "the stream's end");
      expect(streamBodyText.complete).toBe(true);
      const parsed = streamed(streamBodyText.text);
      expect(parsed).toEqual({ content: DELTAS.join(""), finished: true, errors: [] });
      await server.within(streaming.socketClosed, "the stream's connection to close");
      // The provider gave both answers in full: neither was cut.
      expect(await (await streamUpstream).settled).toBe(false);
      expect(await (await jsonUpstream).settled).toBe(false);

      const exit = await server.within(server.exited, "the server's exit", 60_000);
      expect({ code: exit.code, signal: exit.signal }, server.stderr()).toEqual({ code: 0, signal: null });
      // Once drained, not at the bound.
      expect(exit.at - released).toBeLessThan(BOUND_MS / 2);
      expect(
        server.logs().find((l) => l.msg === "requests drained"),
        server.stderr(),
      ).toMatchObject({ level: "info", duration_ms: expect.any(Number) });
      expect(server.logs().filter((l) => l.msg.startsWith("drain timed out"))).toEqual([]);
      expect(
        server.logs().filter((l) => l.level === "error"),
        server.stderr(),
      ).toEqual([]);
      expect(server.stderr()).not.toMatch(STACK_TRACE);
      idle.agent.destroy();
    });

    it("KONTOR_SHUTDOWN_TIMEOUT_MS bounds the drain: a request that never finishes is cut at the bound, and the process exits 0", {
      timeout: 120_000,
    }, async () => {
      scratch = await provisionStack(stack);
      const BOUND_MS = 1_500;
      const { server, key } = await startServer(scratch, { KONTOR_SHUTDOWN_TIMEOUT_MS: String(BOUND_MS) });
      const never = gate();
      const upstream = nextUpstream(stream({ deltas: DELTAS, holdAfter: 2, gate: never.promise }));
      const streaming = chat(server.port, key, streamBody);
      await server.within(reaching(upstream, streaming), "the provider to receive the request");
      await server.within(streaming.firstBytes, "the first bytes of the stream");

      const signalled = performance.now();
      server.child.kill("SIGTERM");
      expect(await server.line((l) => l.msg === "shutting down", "shutting down")).toMatchObject({
        in_flight: 1,
        timeout_ms: BOUND_MS,
      });

      // The client sees its connection close before the answer's end.
      const cut = await server.within(streaming.done, "the stream's end");
      const cutAt = performance.now();
      expect(cut.complete).toBe(false);
      expect(streamed(cut.text).finished).toBe(false);
      await server.within(streaming.socketClosed, "the stream's connection to close");
      expect(cutAt - signalled).toBeGreaterThanOrEqual(BOUND_MS - 50);

      const exit = await server.within(server.exited, "the server's exit", 60_000);
      expect({ code: exit.code, signal: exit.signal }, server.stderr()).toEqual({ code: 0, signal: null });
      expect(exit.at - signalled).toBeGreaterThanOrEqual(BOUND_MS - 50);
      expect(exit.at - signalled).toBeLessThan(BOUND_MS + 15_000);
      expect(
        server.logs().find((l) => l.msg.startsWith("drain timed out")),
        server.stderr(),
      ).toMatchObject({ level: "warn", in_flight: 1, timeout_ms: BOUND_MS });
      expect(server.logs().filter((l) => l.msg === "requests drained")).toEqual([]);
      // Cutting the client's connection let the provider go too.
      expect(await (await upstream).settled).toBe(true);
      expect(server.stderr()).not.toMatch(STACK_TRACE);
    });

    it.runIf(stack === stacks()[0])(
      "a second SIGTERM during the drain forces the exit (exit 1, said in a log line)",
      { timeout: 120_000 },
      async () => {
        scratch = await provisionStack(stack);
        const { server, key } = await startServer(scratch, { KONTOR_SHUTDOWN_TIMEOUT_MS: "60000" });
        const never = gate();
        const upstream = nextUpstream(stream({ deltas: DELTAS, holdAfter: 2, gate: never.promise }));
        const streaming = chat(server.port, key, streamBody);
        await server.within(reaching(upstream, streaming), "the provider to receive the request");
        await server.within(streaming.firstBytes, "the first bytes of the stream");

        server.child.kill("SIGTERM");
        await server.line((l) => l.msg === "shutting down", "shutting down");
        server.child.kill("SIGTERM");
        const exit = await server.within(server.exited, "the server's exit", 60_000);
        expect({ code: exit.code, signal: exit.signal }, server.stderr()).toEqual({ code: 1, signal: null });
        expect(
          server.logs().find((l) => l.msg.startsWith("second signal")),
          server.stderr(),
        ).toMatchObject({ level: "warn", signal: "SIGTERM", in_flight: 1 });
        expect((await streaming.done).complete).toBe(false);
      },
    );
  });
}

describe("KONTOR_SHUTDOWN_TIMEOUT_MS", () => {
  it("defaults to 10 s and takes a positive number of milliseconds", () => {
    expect(loadConfig({}).shutdownTimeoutMs).toBe(10_000);
    expect(loadConfig({ KONTOR_SHUTDOWN_TIMEOUT_MS: "" }).shutdownTimeoutMs).toBe(10_000);
    expect(loadConfig({ KONTOR_SHUTDOWN_TIMEOUT_MS: "2500" }).shutdownTimeoutMs).toBe(2_500);
    for (const bad of ["0", "-1", "abc", "10s", "Infinity", " "]) {
      expect(() => loadConfig({ KONTOR_SHUTDOWN_TIMEOUT_MS: bad }), bad).toThrow(
        new ConfigError(`KONTOR_SHUTDOWN_TIMEOUT_MS must be a positive number, got '${bad}'.`),
      );
    }
  });

  it("a bad value stops the server at start: exit 1 and one line saying why", {
    timeout: 60_000,
  }, async () => {
    const server = spawnServer(
      { KONTOR_SHUTDOWN_TIMEOUT_MS: "10s", DATA_DIR: "/nonexistent/kontor-shutdown-test" },
      await freePort(),
    );
    try {
      const exit = await server.within(server.exited, "the server's exit", 50_000);
      expect(exit.code, server.stderr()).toBe(1);
      expect(server.stderr()).toBe(
        "kontor: KONTOR_SHUTDOWN_TIMEOUT_MS must be a positive number, got '10s'.\n",
      );
    } finally {
      killGroup(server.child);
    }
  });
});

describe.runIf(stacks().includes("postgres"))(
  "graceful shutdown in cluster mode: KONTOR_WORKERS=2 [postgres]",
  () => {
    let scratch: Scratch | undefined;
    let server: Proc;
    let key: string;
    /** Worker number → pid of its latest worker that reported ready. */
    const workers = () =>
      new Map(
        server
          .logs()
          .filter((l) => l.msg === "worker ready")
          .map((l) => [l.worker as number, l.pid as number]),
      );

    afterAll(async () => {
      if (server) killGroup(server.child);
      await scratch?.drop();
    });

    it("a worker stopped by a signal of its own drains, exits 0 and is replaced without counting as a crash", {
      timeout: 180_000,
    }, async () => {
      scratch = await provisionStack("postgres");
      ({ server, key } = await startServer(scratch, {
        KONTOR_WORKERS: "2",
        KONTOR_SHUTDOWN_TIMEOUT_MS: "60000",
      }));
      const victim = workers().get(1)!;
      process.kill(victim, "SIGTERM");
      expect(
        await server.line((l) => l.msg === "shutting down" && l.worker === 1, "shutting down (worker 1)"),
      ).toMatchObject({ signal: "SIGTERM", in_flight: 0 });
      expect(
        await server.line(
          (l) => l.msg === "worker stopped: starting another",
          "worker stopped: starting another",
        ),
      ).toMatchObject({
        level: "info",
        worker: 1,
        pid: victim,
        code: 0,
      });
      const replacement = await server.line(
        (l) => l.msg === "worker ready" && l.worker === 1 && l.pid !== victim,
        "worker ready (the replacement)",
      );
      expect(replacement.pid).not.toBe(victim);
      expect(server.logs().filter((l) => l.msg.startsWith("worker died"))).toEqual([]);
    });

    it("SIGTERM to the primary: each worker drains its requests in flight, the primary waits, restarts none and exits 0", {
      timeout: 180_000,
    }, async () => {
      const pids = [...workers().values()];
      expect(pids).toHaveLength(2);
      const readyBefore = server.logs().filter((l) => l.msg === "worker ready").length;

      // Two streams on two connections (the primary hands new connections to the workers in turn).
      const held = gate();
      const exchanges: Exchange[] = [];
      const upstreams: Promise<FakeRequest>[] = [];
      for (let i = 0; i < 2; i++) {
        upstreams.push(nextUpstream(stream({ deltas: DELTAS, holdAfter: 2, gate: held.promise })));
        exchanges.push(chat(server.port, key, streamBody));
        await server.within(reaching(upstreams[i]!, exchanges[i]!), `the provider to receive request ${i}`);
        await server.within(exchanges[i]!.firstBytes, `the first bytes of stream ${i}`);
      }

      const signalled = server.logs().length;
      server.child.kill("SIGTERM");
      await server.line(
        (l) => l.msg === "shutting down" && l.worker === undefined,
        "shutting down (primary)",
        { from: signalled },
      );
      const draining = await Promise.all(
        [1, 2].map((worker) =>
          server.line(
            (l) => l.msg === "shutting down" && l.worker === worker,
            `shutting down (worker ${worker})`,
            { from: signalled },
          ),
        ),
      );
      expect(draining.map((l) => l.in_flight).reduce((a: number, b: number) => a + b, 0)).toBe(2);
      expect(server.child.exitCode).toBeNull();

      held.open();
      for (const exchange of exchanges) {
        const answer = await server.within(exchange.done, "a stream's end");
        expect(answer.complete).toBe(true);
        expect(streamed(answer.text)).toEqual({ content: DELTAS.join(""), finished: true, errors: [] });
      }
      for (const upstream of upstreams) expect(await (await upstream).settled).toBe(false);

      const exit = await server.within(server.exited, "the server's exit", 60_000);
      expect({ code: exit.code, signal: exit.signal }, server.stderr()).toEqual({ code: 0, signal: null });
      const after = server.logs().slice(signalled);
      expect(
        after
          .filter((l) => l.msg === "worker stopped")
          .map((l) => [l.pid, l.code])
          .sort(),
      ).toEqual(pids.map((pid) => [pid, 0]).sort());
      expect(
        after
          .filter((l) => l.msg === "requests drained")
          .map((l) => l.worker)
          .sort(),
      ).toEqual([1, 2]);
      // No worker was replaced: none started after the signal, none died.
      expect(server.logs().filter((l) => l.msg === "worker ready")).toHaveLength(readyBefore);
      expect(
        after.filter(
          (l) =>
            l.msg.startsWith("worker died") ||
            l.msg.startsWith("worker stopped:") ||
            l.msg.startsWith("worker did not stop"),
        ),
      ).toEqual([]);
      expect(
        server.logs().filter((l) => l.level === "error"),
        server.stderr(),
      ).toEqual([]);
      expect(server.stderr()).not.toMatch(STACK_TRACE);
    });
  },
);
