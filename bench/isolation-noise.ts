/**
 * The noisy workspace of bench/isolation.ts, in a process of its own so its load never runs on the
 * event loop that times the quiet workspace. Settings come as JSON in BENCH_NOISE (NoiseSettings);
 * it runs until its deadline or its request budget, whichever comes first, then prints one JSON
 * line (NoiseReport) on stdout and exits. Traffic goes only to `url` (127.0.0.1).
 *
 * What it does, as hard as it can, with every key of the workspace: creates leads with long notes
 * (each with a fresh Idempotency-Key), sends a GraphQL query of 100 leads' notes with a fresh key
 * (what once kept ~1 MB per request), reads the biggest pages of leads and events (`limit=100`),
 * and keeps more raw uploads open than the plan's slots, each trickling its bytes.
 */
import { request as httpRequest } from "node:http";

export interface NoiseSettings {
  url: string;
  keys: string[];
  /** X-Forwarded-For of every request (the server trusts loopback as its proxy). */
  forwardedFor: string;
  seconds: number;
  /** Requests of the API loops at once. */
  connections: number;
  /** The most API requests sent in all (uploads not counted). */
  maxRequests: number;
  notesChars: number;
  /** Raw uploads kept open at once (0: none), into this bucket. */
  uploads: number;
  bucketId?: string;
  uploadBytes: number;
  uploadChunkBytes: number;
  uploadIntervalMs: number;
}

export interface NoiseReport {
  seconds: number;
  /** Per kind of request: how many, and their answers by status (`201`, `429 rate_limit_exceeded`, `error`, …). */
  kinds: Record<string, { sent: number; answers: Record<string, number> }>;
}

const settings = JSON.parse(process.env.BENCH_NOISE ?? "null") as NoiseSettings | null;
if (!settings) throw new Error("BENCH_NOISE must hold the noise's settings as JSON.");

const started = Date.now();
const deadline = started + settings.seconds * 1000;
const kinds: NoiseReport["kinds"] = {};
let sent = 0;
let keyIndex = 0;
const run = Math.random().toString(36).slice(2, 8);
const nextKey = () => settings.keys[keyIndex++ % settings.keys.length]!;
const notes = "n".repeat(settings.notesChars);

function count(kind: string, answer: string) {
  const entry = (kinds[kind] ??= { sent: 0, answers: {} });
  entry.sent++;
  entry.answers[answer] = (entry.answers[answer] ?? 0) + 1;
}

/** The answer as the report counts it: the status, and the error code of a refusal. */
async function answerOf(response: Response): Promise<string> {
  if (response.ok) {
    await response.arrayBuffer();
    return String(response.status);
  }
  const text = await response.text();
  try {
    return `${response.status} ${(JSON.parse(text) as { error?: { code?: string } }).error?.code ?? ""}`.trim();
  } catch {
    return String(response.status);
  }
}

type Kind = {
  name: string;
  init: () => { path: string; method: string; body?: string; headers?: Record<string, string> };
};

const KINDS: Kind[] = [
  {
    name: "POST /v1/leads (10 000-character notes, fresh Idempotency-Key)",
    init: () => ({
      path: "/v1/leads",
      method: "POST",
      body: JSON.stringify({ first_name: "Noisy", notes }),
      headers: { "content-type": "application/json", "idempotency-key": `noise-${run}-${sent}` },
    }),
  },
  {
    name: "POST /graphql leads(limit: 100) { notes } (fresh Idempotency-Key)",
    init: () => ({
      path: "/graphql",
      method: "POST",
      body: JSON.stringify({ query: "{ leads(limit: 100) { data { id notes } } }" }),
      headers: { "content-type": "application/json", "idempotency-key": `noise-gql-${run}-${sent}` },
    }),
  },
  { name: "GET /v1/leads?limit=100", init: () => ({ path: "/v1/leads?limit=100", method: "GET" }) },
  { name: "GET /v1/events?limit=100", init: () => ({ path: "/v1/events?limit=100", method: "GET" }) },
];

async function apiLoop(offset: number) {
  for (let i = offset; Date.now() < deadline && sent < settings!.maxRequests; i++) {
    const kind = KINDS[i % KINDS.length]!;
    const { path, method, body, headers } = kind.init();
    sent++;
    try {
      const response = await fetch(`${settings!.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${nextKey()}`,
          "x-forwarded-for": settings!.forwardedFor,
          ...headers,
        },
        ...(body && { body }),
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
      count(kind.name, await answerOf(response));
    } catch {
      count(kind.name, Date.now() >= deadline ? "cut at the deadline" : "error");
    }
  }
}

const UPLOAD = "POST /v1/buckets/{id}/objects (raw, trickled)";

/** One raw upload trickling its bytes; resolves with its answer once it has one (or the deadline cuts it). */
function upload(n: number): Promise<string> {
  const s = settings!;
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(s.uploadChunkBytes, 0x78);
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const stopAt = setTimeout(() => finish("cut at the deadline"), Math.max(1, deadline - Date.now()));
    const finish = (answer: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(stopAt);
      req.destroy();
      resolve(answer);
    };
    const req = httpRequest(`${s.url}/v1/buckets/${s.bucketId}/objects?file_name=noise-${run}-${n}.bin`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${nextKey()}`,
        "content-type": "application/octet-stream",
        "x-forwarded-for": s.forwardedFor,
      },
    });
    req.on("response", (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => {
        let code = "";
        try {
          code =
            (JSON.parse(Buffer.concat(parts).toString("utf8")) as { error?: { code?: string } }).error
              ?.code ?? "";
        } catch {
          // not JSON
        }
        finish(`${res.statusCode} ${code}`.trim());
      });
      res.on("error", () => finish("error"));
    });
    req.on("error", () => finish("error"));
    let written = 0;
    const tick = () => {
      if (done) return;
      if (written >= s.uploadBytes) return void req.end();
      req.write(chunk);
      written += chunk.length;
      timer = setTimeout(tick, s.uploadIntervalMs);
    };
    tick();
  });
}

async function uploadLoop(offset: number) {
  for (let n = offset; Date.now() < deadline; n += settings!.uploads) {
    const answer = await upload(n);
    count(UPLOAD, answer);
    // A refusal comes back at once: a short pause, so the loop retries rather than spins.
    if (!answer.startsWith("201")) await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

await Promise.all([
  ...Array.from({ length: settings.connections }, (_, i) => apiLoop(i)),
  ...(settings.bucketId ? Array.from({ length: settings.uploads }, (_, i) => uploadLoop(i)) : []),
]);
const report: NoiseReport = { seconds: (Date.now() - started) / 1000, kinds };
process.stdout.write(`${JSON.stringify(report)}\n`);
