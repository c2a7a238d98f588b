import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { postWebhook, type SendResult } from "../../server/webhooks/send.ts";
import { checkWebhookTarget, guardedLookup, type LookupAll } from "../../server/webhooks/url-policy.ts";
import { type HangUp, type RudeReceiver, startRudeReceiver } from "../support/receiver.ts";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

interface Receiver {
  port: number;
  url: string;
  connections: number;
  requests: Received[];
}

const servers: ReturnType<typeof createServer>[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A real HTTP server on loopback that records every connection and request before `respond`. */
async function receiver(respond: (res: ServerResponse, req: IncomingMessage) => void): Promise<Receiver> {
  const state: Receiver = { port: 0, url: "", connections: 0, requests: [] };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    state.requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: Buffer.concat(chunks),
    });
    respond(res, req);
  });
  server.on("connection", () => state.connections++);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}`;
  return state;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const DEV = { timeoutMs: 2_000, production: false };

function expectNoResponse(result: SendResult, error: SendResult["error"]) {
  expect(result.error).toBe(error);
  expect(result.ok).toBe(false);
  expect(result.status).toBeNull();
  expect(result.body).toBeNull();
  expect(result.errorMessage).toBeTruthy();
  expect(Number.isInteger(result.durationMs)).toBe(true);
}

/** Resolves every name to `address`, and records what it was asked. */
function resolvingTo(...addresses: string[]): LookupAll & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (hostname: string) => {
    asked.push(hostname);
    const address = addresses[Math.min(asked.length, addresses.length) - 1] as string;
    return [{ address, family: address.includes(":") ? 6 : 4 }];
  };
  return Object.assign(lookup, { asked });
}

describe("postWebhook against a real receiver", () => {
  it("reports a 2xx as ok with status, body and an integer duration", async () => {
    const server = await receiver((res) =>
      res.writeHead(200, { "content-type": "text/plain" }).end("thanks"),
    );
    const result = await postWebhook(`${server.url}/in`, "{}", {}, DEV);
    expect(result).toEqual({
      ok: true,
      status: 200,
      body: "thanks",
      durationMs: result.durationMs,
      error: null,
      errorMessage: null,
    });
    expect(Number.isInteger(result.durationMs)).toBe(true);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(result.durationMs).toBeLessThan(2_000);
    const noContent = await receiver((res) => res.writeHead(204).end());
    expect(await postWebhook(noContent.url, "{}", {}, DEV)).toMatchObject({
      ok: true,
      status: 204,
      body: "",
      error: null,
    });
  });

  it("sends exactly one POST with the JSON body, the caller's headers and its own", async () => {
    const server = await receiver((res) => res.end());
    const body = JSON.stringify({ id: "evt_1", type: "lead.created", data: { name: "Zoë 🚀" } });
    const result = await postWebhook(
      `${server.url}/hooks/in?team=7`,
      body,
      { "X-Kontor-Signature": "t=1,v1=abc", "X-Kontor-Event": "lead.created" },
      DEV,
    );
    expect(result.ok).toBe(true);
    expect(server.requests).toHaveLength(1);
    const [received] = server.requests as [Received];
    expect(received.method).toBe("POST");
    expect(received.url).toBe("/hooks/in?team=7");
    expect(received.body.equals(Buffer.from(body, "utf8"))).toBe(true);
    expect(received.headers["content-type"]).toBe("application/json");
    expect(received.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(Number(received.headers["content-length"])).toBeGreaterThan(body.length); // multi-byte characters counted as bytes
    expect(received.headers["user-agent"]).toBe("Kontor-Webhooks/1.0");
    expect(received.headers["x-kontor-signature"]).toBe("t=1,v1=abc");
    expect(received.headers["x-kontor-event"]).toBe("lead.created");
    expect(received.headers.host).toBe(`127.0.0.1:${server.port}`);
    expect(received.headers["transfer-encoding"]).toBeUndefined();
  });

  it("lets the caller set User-Agent but never Content-Type or Content-Length", async () => {
    const server = await receiver((res) => res.end());
    await postWebhook(
      server.url,
      "[1]",
      { "user-agent": "Custom/2", "content-type": "text/plain", "Content-Length": "999" },
      DEV,
    );
    const [received] = server.requests as [Received];
    expect(received.headers["user-agent"]).toBe("Custom/2");
    expect(received.headers["content-type"]).toBe("application/json");
    expect(received.headers["content-length"]).toBe("3");
    expect(received.rawHeaders.filter((name) => name.toLowerCase() === "content-type")).toHaveLength(1);
    expect(received.body.toString()).toBe("[1]");
  });

  it("reports a 500 as not ok, with its body", async () => {
    const server = await receiver((res) => res.writeHead(500).end("boom: database down"));
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result).toMatchObject({
      ok: false,
      status: 500,
      body: "boom: database down",
      error: null,
      errorMessage: null,
    });
  });

  it("reports a 410 status", async () => {
    const server = await receiver((res) => res.writeHead(410).end());
    expect(await postWebhook(server.url, "{}", {}, DEV)).toMatchObject({
      ok: false,
      status: 410,
      body: "",
      error: null,
    });
  });

  it("never follows a redirect", async () => {
    const elsewhere = await receiver((res) => res.end("should not be reached"));
    const server = await receiver((res) => res.writeHead(302, { location: `${elsewhere.url}/moved` }).end());
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result).toMatchObject({ ok: false, status: 302, error: null });
    expect(server.requests).toHaveLength(1);
    expect(elsewhere.connections).toBe(0);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("keeps only maxBodyBytes of a large body", async () => {
    const server = await receiver((res) => res.end("x".repeat(10 * 1024)));
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result.ok).toBe(true);
    expect(result.body).toHaveLength(2048);
    expect(Buffer.byteLength(result.body ?? "")).toBe(2048);
    const small = await postWebhook(server.url, "{}", {}, { ...DEV, maxBodyBytes: 10 });
    expect(small.body).toBe("x".repeat(10));
  });

  it("stops reading an endless body and closes the response", async () => {
    let written = 0;
    let closedEarly: (value: boolean) => void = () => {};
    const closed = new Promise<boolean>((resolve) => (closedEarly = resolve));
    const server = await receiver((res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, "a");
      const pump = () => {
        while (!res.destroyed && written < 512 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
      };
      res.on("drain", pump);
      res.on("close", () => closedEarly(!res.writableFinished));
      pump();
    });
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result).toMatchObject({ ok: true, status: 200, error: null });
    expect(result.body).toBe("a".repeat(2048));
    expect(await closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it("cuts a UTF-8 body on a character boundary", async () => {
    const server = await receiver((res) => res.end("é".repeat(2000))); // 2 bytes each
    const result = await postWebhook(server.url, "{}", {}, { ...DEV, maxBodyBytes: 2047 });
    expect(result.body).toBe("é".repeat(1023));
    expect(result.body).not.toContain("\uFFFD");
  });

  it("times out when the receiver answers too late", async () => {
    const server = await receiver((res) => setTimeout(() => res.end("late"), 1_500));
    const result = await postWebhook(server.url, "{}", {}, { ...DEV, timeoutMs: 300 });
    expectNoResponse(result, "timeout");
    expect(result.errorMessage).toBe("no response within 300 ms.");
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
    expect(result.durationMs).toBeLessThan(1_200);
    expect(server.requests).toHaveLength(1);
  });

  it("keeps status and partial body when the body stalls after a 2xx", async () => {
    const server = await receiver((res) => {
      res.writeHead(200);
      res.write("partial");
    });
    const started = performance.now();
    const result = await postWebhook(server.url, "{}", {}, { ...DEV, timeoutMs: 300 });
    expect(performance.now() - started).toBeLessThan(1_200);
    expect(result).toMatchObject({ ok: true, status: 200, body: "partial", error: "timeout" });
    expect(result.errorMessage).toContain("did not end within 300 ms");
    expect(result.durationMs).toBeLessThan(290); // measured to the headers
  });

  it("keeps a non-2xx status when its body stalls", async () => {
    const server = await receiver((res) => {
      res.writeHead(503);
      res.write("busy");
    });
    const result = await postWebhook(server.url, "{}", {}, { ...DEV, timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, status: 503, body: "busy", error: "timeout" });
  });

  it("reports a refused connection", async () => {
    const port = await closedPort();
    const result = await postWebhook(`http://127.0.0.1:${port}/`, "{}", {}, DEV);
    expectNoResponse(result, "connection_refused");
    expect(result.errorMessage).toContain("ECONNREFUSED");
  });

  it("reports a connection reset before any response", async () => {
    const server = await receiver((_res, req) => req.socket.destroy());
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expectNoResponse(result, "connection_reset");
    expect(server.requests).toHaveLength(1);
  });

  it("keeps status and bytes read when the connection drops mid-body", async () => {
    const server = await receiver((res, req) => {
      res.writeHead(200, { "content-length": "1000" });
      res.write("abc", () => setTimeout(() => req.socket.destroy(), 20));
    });
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result).toMatchObject({ ok: true, status: 200, body: "abc", error: "connection_reset" });
  });

  it("reports TLS failures", async () => {
    const server = await receiver((res) => res.end());
    const result = await postWebhook(`https://127.0.0.1:${server.port}/`, "{}", {}, DEV);
    expectNoResponse(result, "tls_error");
    expect(result.errorMessage).not.toMatch(/\s$/);
  });

  it("reports DNS failures from the resolver", async () => {
    const lookup: LookupAll = async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    };
    const result = await postWebhook("http://nowhere.example/", "{}", {}, { ...DEV, lookup });
    expectNoResponse(result, "dns_failure");
    expect(result.errorMessage).toContain("nowhere.example");
  });

  it("refuses invalid URLs without sending anything", async () => {
    for (const url of [
      "ftp://example.com/",
      "/relative",
      "javascript:alert(1)",
      "https://user:pw@example.com/",
    ]) {
      const result = await postWebhook(url, "{}", {}, DEV);
      expectNoResponse(result, "invalid_url");
    }
    const server = await receiver((res) => res.end());
    const insecure = await postWebhook(server.url, "{}", {}, { ...DEV, production: true });
    expectNoResponse(insecure, "invalid_url");
    expect(insecure.errorMessage).toBe("url must use https in production.");
    expect(server.connections).toBe(0);
  });

  it("turns a header it cannot send into a result instead of throwing", async () => {
    const server = await receiver((res) => res.end());
    const result = await postWebhook(server.url, "{}", { "X-Bad": "line\r\nInjected: yes" }, DEV);
    expectNoResponse(result, "network_error");
    expect(server.connections).toBe(0);
  });

  it("reuses one keep-alive connection for consecutive deliveries", async () => {
    const server = await receiver((res) => res.end("ok"));
    for (let i = 0; i < 3; i++) expect((await postWebhook(server.url, `{"n":${i}}`, {}, DEV)).ok).toBe(true);
    expect(server.requests.map((r) => r.body.toString())).toEqual(['{"n":0}', '{"n":1}', '{"n":2}']);
    expect(server.connections).toBe(1);
  });

  it("retries once on a fresh connection when a pooled one turns out closed", async () => {
    const perSocket = new WeakMap<object, number>();
    const server = await receiver((res, req) => {
      const seen = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, seen);
      if (seen === 2)
        req.socket.destroy(); // as a receiver closing an idle keep-alive connection
      else res.end("ok");
    });
    expect((await postWebhook(server.url, "{}", {}, DEV)).ok).toBe(true);
    const result = await postWebhook(server.url, "{}", {}, DEV);
    expect(result).toMatchObject({ ok: true, status: 200, body: "ok", error: null });
    expect(server.connections).toBe(2);
    expect(server.requests).toHaveLength(3);
  });
});

describe("postWebhook in production", () => {
  const PROD = { timeoutMs: 2_000, production: true };

  it("refuses a name that resolves to loopback, before connecting", async () => {
    const server = await receiver((res) => res.end());
    const lookup = resolvingTo("127.0.0.1");
    const result = await postWebhook(
      `https://hooks.example.com:${server.port}/in`,
      "{}",
      {},
      { ...PROD, lookup },
    );
    expectNoResponse(result, "address_not_allowed");
    expect(result.errorMessage).toBe(
      "url resolves to 127.0.0.1, a loopback address, which production refuses.",
    );
    expect(lookup.asked).toEqual(["hooks.example.com"]);
    expect(server.connections).toBe(0);
  });

  it("delivers to that same name in development (the receiver is reachable)", async () => {
    const server = await receiver((res) => res.end("hi"));
    const lookup = resolvingTo("127.0.0.1");
    const result = await postWebhook(
      `http://hooks.example.com:${server.port}/in`,
      "{}",
      {},
      { ...DEV, lookup },
    );
    expect(result).toMatchObject({ ok: true, status: 200, body: "hi" });
    expect(lookup.asked).toEqual(["hooks.example.com"]);
    expect(server.requests[0]?.headers.host).toBe(`hooks.example.com:${server.port}`);
  });

  it("refuses IP literals and localhost without a lookup", async () => {
    const server = await receiver((res) => res.end());
    const lookup = resolvingTo("93.184.215.14");
    for (const host of ["127.0.0.1", "[::ffff:127.0.0.1]", "localhost", "app.localhost"]) {
      const result = await postWebhook(`https://${host}:${server.port}/`, "{}", {}, { ...PROD, lookup });
      expectNoResponse(result, "address_not_allowed");
    }
    expect(lookup.asked).toEqual([]);
    expect(server.connections).toBe(0);
  });

  it("lets a public address through the policy (checked without connecting to it)", async () => {
    const lookup = resolvingTo("93.184.215.14");
    const answer = await new Promise<unknown>((resolve, reject) =>
      guardedLookup({ production: true, lookup })("hooks.example.com", { all: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses),
      ),
    );
    expect(answer).toEqual([{ address: "93.184.215.14", family: 4 }]);
    expect(lookup.asked).toEqual(["hooks.example.com"]);
  });

  it("is immune to DNS rebinding: it connects only to the address it checks", async () => {
    const server = await receiver((res) => res.end());
    const lookup = resolvingTo("93.184.215.14", "127.0.0.1");
    const url = `https://hooks.example.com:${server.port}/in`;
    await expect(checkWebhookTarget(new URL(url), { production: true, lookup })).resolves.toBeUndefined();
    const result = await postWebhook(url, "{}", {}, { ...PROD, lookup });
    expectNoResponse(result, "address_not_allowed");
    expect(result.errorMessage).toContain("127.0.0.1");
    expect(lookup.asked).toEqual(["hooks.example.com", "hooks.example.com"]);
    expect(server.connections).toBe(0);
  });
});

describe("a receiver that hangs up while a multi-megabyte body is being written", () => {
  // Larger than what the loopback socket buffers absorb, so the body is still being written when the receiver gives up.
  const LARGE = JSON.stringify({ id: "evt_large", data: "x".repeat(16 * 1024 * 1024) });
  const rude: RudeReceiver[] = [];
  afterEach(async () => {
    for (const receiver of rude.splice(0)) await receiver.close();
  });
  const rudeReceiver = async (mode: HangUp) => {
    const receiver = await startRudeReceiver(mode);
    rude.push(receiver);
    return receiver;
  };

  /**
   * Runs `send`, then waits (bounded) until `closing` client sockets opened meanwhile have closed:
   * a socket emits its last 'error' before 'close'. Returns the exceptions nobody caught, each of
   * which would have ended a server process.
   */
  async function uncaughtWhile<T>(
    send: () => Promise<T>,
    closing = 1,
  ): Promise<{ value: T; uncaught: Error[] }> {
    const uncaught: Error[] = [];
    const sockets: Socket[] = [];
    const onSocket = (message: unknown) => sockets.push((message as { socket: Socket }).socket);
    const onUncaught = (error: Error) => uncaught.push(error);
    subscribe("net.client.socket", onSocket);
    process.on("uncaughtExceptionMonitor", onUncaught);
    try {
      const value = await send();
      const deadline = Date.now() + 10_000;
      const closed = () => sockets.filter((socket) => socket.closed).length;
      while (closed() < closing && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(closed(), "client sockets closed").toBeGreaterThanOrEqual(closing);
      await new Promise((r) => setImmediate(r));
      return { value, uncaught };
    } finally {
      unsubscribe("net.client.socket", onSocket);
      process.off("uncaughtExceptionMonitor", onUncaught);
    }
  }

  it("keeps the 413 of a receiver that answers at once and closes, without an uncaught EPIPE", async () => {
    const receiver = await rudeReceiver("answer-then-close");
    for (let i = 0; i < 3; i++) {
      const { value: result, uncaught } = await uncaughtWhile(() =>
        postWebhook(receiver.url("/big"), LARGE, {}, DEV),
      );
      expect(uncaught).toEqual([]);
      expect(result).toMatchObject({ ok: false, status: 413, body: "body too large", error: null });
    }
    expect(receiver.connections).toBe(3);
    expect(receiver.hungUp).toBe(3);
  });

  it("stops sending the rest of the body once the receiver has answered", async () => {
    let bytes = 0;
    let closed = false;
    let resume = () => {};
    const sockets: Socket[] = [];
    // Answers 413 on the first bytes and reads nothing more until told to.
    const server = createNetServer((socket) => {
      sockets.push(socket);
      socket.on("error", () => {});
      socket.on("close", () => (closed = true));
      socket.on("data", (chunk: Buffer) => {
        if (bytes === 0) {
          socket.pause();
          socket.write("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n\r\nbig");
          resume = () => socket.resume();
        }
        bytes += chunk.length;
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const result = await postWebhook(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        LARGE,
        {},
        DEV,
      );
      expect(result).toMatchObject({ ok: false, status: 413, body: "big", error: null });
      resume();
      // Whatever was already on its way arrives, then the connection ends short of the body.
      const deadline = Date.now() + 10_000;
      while (!closed && bytes < LARGE.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(closed).toBe(true);
      expect(bytes).toBeLessThan(LARGE.length);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("survives a receiver that answers 400 at once and resets the connection", async () => {
    const receiver = await rudeReceiver("answer-then-reset");
    for (let i = 0; i < 3; i++) {
      const { value: result, uncaught } = await uncaughtWhile(() =>
        postWebhook(receiver.url("/big"), LARGE, {}, DEV),
      );
      expect(uncaught).toEqual([]);
      expect(result.ok).toBe(false);
      // The reset may overtake the answer.
      if (result.status === null) expect(result.error).toBe("connection_reset");
      else expect(result).toMatchObject({ status: 400, body: "bad request" });
    }
  });

  it("reports connection_reset when the receiver resets mid-body without answering", async () => {
    const receiver = await rudeReceiver("reset-mid-body");
    for (let i = 0; i < 3; i++) {
      const { value: result, uncaught } = await uncaughtWhile(() =>
        postWebhook(receiver.url("/big"), LARGE, {}, DEV),
      );
      expect(uncaught).toEqual([]);
      expectNoResponse(result, "connection_reset");
    }
    expect(receiver.hungUp).toBe(3);
  });

  it("reports connection_refused for a large body to a closed port", async () => {
    const port = await closedPort();
    const { value: result, uncaught } = await uncaughtWhile(() =>
      postWebhook(`http://127.0.0.1:${port}/`, LARGE, {}, DEV),
    );
    expect(uncaught).toEqual([]);
    expectNoResponse(result, "connection_refused");
  });

  it("answers early on a reused keep-alive connection without poisoning the pool", async () => {
    let requests = 0;
    const sockets = new Set<unknown>();
    // Reads small bodies and answers 200; answers a large one at once with 413 and closes.
    const server = await receiver((res, req) => {
      requests++;
      sockets.add(req.socket);
      res.end("ok");
    });
    const polite = server.url;
    const hangUp = await rudeReceiver("answer-then-close");
    const first = await postWebhook(`${polite}/a`, "{}", {}, DEV);
    expect(first).toMatchObject({ ok: true, status: 200 });
    const { value: refused, uncaught } = await uncaughtWhile(async () => {
      const big = await postWebhook(hangUp.url("/big"), LARGE, {}, DEV);
      // The pool of the same policy still serves the polite receiver on its kept connection.
      const again = await postWebhook(`${polite}/b`, "{}", {}, DEV);
      expect(again).toMatchObject({ ok: true, status: 200, body: "ok" });
      const bigAgain = await postWebhook(hangUp.url("/big"), LARGE, {}, DEV);
      return [big, bigAgain];
    }, 2);
    expect(uncaught).toEqual([]);
    for (const result of refused) expect(result).toMatchObject({ ok: false, status: 413, error: null });
    expect(requests).toBe(2);
    expect(sockets.size).toBe(1);
    expect(server.connections).toBe(1);
    // The connection the receiver gave up on is never reused: each large delivery opened its own.
    expect(hangUp.connections).toBe(2);
  });
});
