import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CORS_EXPOSED_HEADERS } from "../../../server/http/cors.ts";
import { createUser, openDashboard, signInUi, type TestUser, useChromium } from "../../support/dashboard.ts";
import { DashboardClient } from "../../support/dashboard-session.ts";
import { raw } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * docs/security.md "Cross-origin requests": the API answers any origin without credentials, the
 * dashboard and the claim page send no CORS header, and a request made with the session cookie is
 * served to the dashboard's own origin only. The server runs as in production, so the cookies are
 * Secure and named `__Host-…`.
 */

const FOREIGN = "https://evil.example";
type HeaderSet = Record<string, string>;
const CREATE_KEY = 'mutation { createApiKey(input: { name: "stolen", scopes: ["leads.read"] }) { secret } }';

const accessControl = (headers: Headers) =>
  [...headers.keys()].filter((name) => name.startsWith("access-control-"));
const listed = (headers: Headers, name: string) =>
  (headers.get(name) ?? "").split(",").map((part) => part.trim().toLowerCase());

/** A page on another localhost port: it tries to read the CSRF token and mint a key with the visitor's session. */
const ATTACKER_PAGE = `<!doctype html><meta charset="utf-8"><title>Not Kontor</title>
<script type="module">
  const kontor = new URLSearchParams(location.search).get("kontor");
  const attempt = async (run) => { try { return await run(); } catch (error) { return { error: String(error) }; } };
  const mutation = ${JSON.stringify(CREATE_KEY)};
  const session = await attempt(async () => {
    const response = await fetch(kontor + "/dashboard/api/session", { credentials: "include" });
    return { status: response.status, body: await response.json() };
  });
  const csrf = session.body?.csrf_token ?? null;
  const graphql = await attempt(async () => {
    const response = await fetch(kontor + "/graphql", {
      method: "POST",
      credentials: "include",
      headers: { "content-type": "application/json", "x-csrf-token": csrf ?? "guessed" },
      body: JSON.stringify({ query: mutation }),
    });
    return { status: response.status, body: await response.text() };
  });
  // A text/plain POST needs no preflight: the browser sends it with the cookie, and only the server can refuse it.
  const simple = await attempt(async () => {
    const response = await fetch(kontor + "/v1/leads", { method: "POST", mode: "no-cors", credentials: "include", body: JSON.stringify({ first_name: "Forged" }) });
    return { type: response.type };
  });
  window.__result = { session, csrf, graphql, simple };
</script>`;

async function startAttackerPage(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer(
    (_req, res) => void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ATTACKER_PAGE),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    // localhost like the Kontor server: another origin (port) but the same site, so SameSite=Lax cookies go along.
    origin: `http://localhost:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

e2e(
  "cross-origin requests",
  (server) => {
    const own = () => new URL(server().config.publicUrl).origin;
    let tenant: Tenant;
    let user: TestUser;
    let dashboard: DashboardClient;

    beforeAll(async () => {
      tenant = await server().tenant();
      user = await createUser(server(), { label: "cors" });
      dashboard = new DashboardClient(server().url);
      const signedIn = await dashboard.signIn(user.email);
      expect(signedIn.status, signedIn.text).toBe(200);
    });

    describe("the API answers any origin, never with credentials", () => {
      const expectAnyOrigin = (headers: Headers) => {
        expect(headers.get("access-control-allow-origin")).toBe("*");
        expect(headers.has("access-control-allow-credentials")).toBe(false);
      };

      it("GET and POST on /v1 and /graphql: `*`, no credentials, the client's headers exposed", async () => {
        const auth = { authorization: `Bearer ${tenant.key}`, origin: FOREIGN };
        const answers = [
          await raw(`${server().api}/workspace`, { headers: auth }),
          await raw(`${server().api}/leads`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: '{"first_name":"Cors"}',
          }),
          await raw(`${server().url}/graphql`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: '{"query":"{ workspace { id } }"}',
          }),
          await raw(`${server().url}/graphql?query=${encodeURIComponent("{ workspace { id } }")}`, {
            headers: auth,
          }),
          // An error too: the page must be able to read why.
          await raw(`${server().api}/workspace`, { headers: { origin: FOREIGN } }),
        ];
        expect(answers.map((a) => a.status)).toEqual([200, 201, 200, 200, 401]);
        for (const answer of answers) {
          expectAnyOrigin(answer.headers);
          const exposed = listed(answer.headers, "access-control-expose-headers");
          for (const name of CORS_EXPOSED_HEADERS) expect(exposed).toContain(name.toLowerCase());
        }
        expect(listed(answers[0]!.headers, "access-control-expose-headers")).toEqual(
          expect.arrayContaining(
            [
              "X-Request-Id",
              "X-RateLimit-Limit",
              "X-RateLimit-Remaining",
              "X-RateLimit-Reset",
              "X-RateLimit-Plan",
              "Retry-After",
              "Idempotent-Replay",
              "x-codingplan-5h-used-percent",
              "x-codingplan-5h-reset",
              "x-codingplan-weekly-used-percent",
              "x-codingplan-weekly-reset",
            ].map((name) => name.toLowerCase()),
          ),
        );
      });

      it("preflights: 204 with the methods, the key-holder's headers and a max age; never the session's headers", async () => {
        for (const [path, method] of [
          [`${server().api}/leads`, "POST"],
          [`${server().api}/leads/lead_01J00000000000000000000000`, "PATCH"],
          [`${server().api}/leads/lead_01J00000000000000000000000`, "DELETE"],
          [`${server().url}/graphql`, "POST"],
        ] as const) {
          const answer = await raw(path, {
            method: "OPTIONS",
            headers: {
              origin: FOREIGN,
              "access-control-request-method": method,
              "access-control-request-headers": "authorization, content-type, idempotency-key",
            },
          });
          expect(answer.status, path).toBe(204);
          expectAnyOrigin(answer.headers);
          expect(listed(answer.headers, "access-control-allow-methods")).toContain(method.toLowerCase());
          expect(listed(answer.headers, "access-control-allow-headers")).toEqual(
            expect.arrayContaining(["authorization", "content-type", "idempotency-key", "accept"]),
          );
          expect(Number(answer.headers.get("access-control-max-age"))).toBeGreaterThan(0);
        }
        const sessionHeaders = await raw(`${server().url}/graphql`, {
          method: "OPTIONS",
          headers: {
            origin: FOREIGN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-csrf-token, kontor-workspace",
          },
        });
        expect(sessionHeaders.status).toBe(204);
        expect(sessionHeaders.headers.has("access-control-allow-credentials")).toBe(false);
        expect(listed(sessionHeaders.headers, "access-control-allow-headers")).not.toContain("x-csrf-token");
        expect(listed(sessionHeaders.headers, "access-control-allow-headers")).not.toContain(
          "kontor-workspace",
        );
      });
    });

    describe("the dashboard and the claim page send no CORS header", () => {
      it("on any method, preflights included, with a foreign Origin", async () => {
        const preflight = {
          origin: FOREIGN,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, x-csrf-token",
        };
        const cases: [string, string, RequestInit][] = [
          [
            "GET",
            "/dashboard/api/session",
            { headers: { origin: FOREIGN, cookie: dashboard.cookieHeader() } },
          ],
          [
            "POST",
            "/dashboard/api/sign-in",
            { headers: { origin: FOREIGN, "content-type": "application/json" }, body: "{}" },
          ],
          ["OPTIONS", "/dashboard/api/session", { headers: preflight }],
          ["OPTIONS", "/dashboard/api/sign-in", { headers: preflight }],
          ["GET", "/dashboard", { headers: { origin: FOREIGN } }],
          ["OPTIONS", "/dashboard", { headers: preflight }],
          ["GET", "/agent/claim", { headers: { origin: FOREIGN } }],
          [
            "POST",
            "/agent/claim",
            {
              headers: { origin: FOREIGN, "content-type": "application/x-www-form-urlencoded" },
              body: "action=deny",
            },
          ],
          ["OPTIONS", "/agent/claim", { headers: preflight }],
        ];
        for (const [method, path, init] of cases) {
          const response = await fetch(`${server().url}${path}`, { ...init, method, redirect: "manual" });
          await response.arrayBuffer();
          expect(accessControl(response.headers), `${method} ${path} (${response.status})`).toEqual([]);
          if (method === "OPTIONS") expect(response.status, `${method} ${path}`).not.toBe(204);
        }
      });
    });

    describe("a session-cookie request is served to the dashboard's own origin only", () => {
      const refused = (answer: { status: number; json: any }, label: string) => {
        expect(answer.status, label).toBe(403);
        const error = answer.json.error ?? answer.json.errors?.[0]?.extensions;
        expect(error, label).toMatchObject({
          type: "permission_error",
          code: "cross_origin_request",
          request_id: expect.stringMatching(/^req_/),
        });
      };
      /** The three kinds of cookie requests: GraphQL, REST, and the account API's session (which hands out the CSRF token). */
      const requests = (headers: HeaderSet, csrf?: string | null) =>
        [
          ["/graphql", () => dashboard.graphql("{ workspace { id } }", undefined, { headers, csrf })],
          ["/v1/workspace", () => dashboard.v1("GET", "/workspace", undefined, { headers, csrf })],
          ["/dashboard/api/session", () => dashboard.api("GET", "/session", undefined, { headers, csrf })],
        ] as const;

      it("refuses a foreign Origin, a cross-site or same-site Sec-Fetch-Site, and `Origin: null` alone, even with a valid CSRF token", async () => {
        const otherPort = `http://localhost:${Number(new URL(own()).port) + 1}`;
        const refusedHeaders: HeaderSet[] = [
          { origin: FOREIGN },
          { origin: otherPort },
          { origin: FOREIGN, "sec-fetch-site": "same-origin" },
          { "sec-fetch-site": "cross-site" },
          { "sec-fetch-site": "same-site" },
          { "sec-fetch-site": "none" },
          { origin: "null" },
          { origin: "null", "sec-fetch-site": "same-site" },
        ];
        for (const headers of refusedHeaders) {
          for (const [path, run] of requests(headers))
            refused(await run(), `${path} ${JSON.stringify(headers)}`);
        }
        // The state-changing account requests too, and nothing is done: no new session, no sign-out.
        const cross = { origin: FOREIGN };
        const signIn = await dashboard.api(
          "POST",
          "/sign-in",
          { email: user.email, password: "correct horse battery staple" },
          { headers: cross },
        );
        refused(signIn, "sign-in");
        expect(signIn.headers.getSetCookie()).toEqual([]);
        refused(await dashboard.api("POST", "/sign-out", undefined, { headers: cross }), "sign-out");
        refused(
          await dashboard.api(
            "POST",
            "/password",
            { current_password: "x", new_password: "y" },
            { headers: cross },
          ),
          "password",
        );
        refused(
          await dashboard.api("POST", "/invitations/accept", { token: "x" }, { headers: cross }),
          "invitations/accept",
        );
        refused(
          await dashboard.api(
            "POST",
            "/sign-up",
            { email: "x@example.com", password: "correct horse battery staple" },
            { headers: cross },
          ),
          "sign-up",
        );
        expect((await dashboard.session()).json.user?.id).toBe(user.userId);
      });

      it("serves the dashboard's own origin, `Sec-Fetch-Site: same-origin`, and a request with neither header, which still needs the CSRF token", async () => {
        const served: HeaderSet[] = [
          { origin: own() },
          { "sec-fetch-site": "same-origin" },
          { origin: own(), "sec-fetch-site": "same-origin" },
          { origin: "null", "sec-fetch-site": "same-origin" },
          {},
        ];
        for (const headers of served) {
          for (const [path, run] of requests(headers))
            expect((await run()).status, `${path} ${JSON.stringify(headers)}`).toBe(200);
        }
        for (const headers of [{ origin: own() }, {}] as HeaderSet[]) {
          for (const [path, run] of requests(headers, null).slice(0, 2)) {
            const answer = await run();
            expect(answer.status, path).toBe(403);
            expect((answer.json.error ?? answer.json.errors[0].extensions).code, path).toBe("csrf_failed");
          }
        }
      });

      it("leaves an API key alone: a foreign page may call with a key, even with a session cookie along", async () => {
        const answer = await raw(`${server().api}/workspace`, {
          headers: {
            authorization: `Bearer ${tenant.key}`,
            origin: FOREIGN,
            cookie: dashboard.cookieHeader(),
          },
        });
        expect(answer.status).toBe(200);
        expect(answer.json.id).toBe(tenant.workspaceId);
      });

      it("the claim page's forms: a foreign Origin is refused before anything is read", async () => {
        const post = (headers: Record<string, string>) =>
          fetch(`${server().url}/agent/claim`, {
            method: "POST",
            headers: {
              cookie: dashboard.cookieHeader(),
              "content-type": "application/x-www-form-urlencoded",
              ...headers,
            },
            body: "action=nope",
            redirect: "manual",
          });
        const foreign = await post({ origin: FOREIGN });
        expect(foreign.status).toBe(403);
        expect(await foreign.text()).toContain("sent from another site");
        const crossSite = await post({ origin: "null", "sec-fetch-site": "cross-site" });
        expect(crossSite.status).toBe(403);
        // Chromium posts this page's forms with `Origin: null` (the page's Referrer-Policy is no-referrer) and `Sec-Fetch-Site: same-origin`.
        for (const headers of [
          { origin: own() },
          { origin: "null", "sec-fetch-site": "same-origin" },
        ] as HeaderSet[]) {
          const answer = await post(headers);
          expect(answer.status, JSON.stringify(headers)).toBe(400);
          expect(await answer.text()).not.toContain("another site");
        }
      });
    });

    describe("cookies outside development", () => {
      it("are named __Host-… with Secure, Path=/ and no Domain; the bare names are not read", async () => {
        const visitor = new DashboardClient(server().url);
        const pre = await visitor.session();
        const [csrfCookie] = pre.headers.getSetCookie();
        expect(csrfCookie).toMatch(/^__Host-kontor_csrf=[A-Za-z0-9_-]{43}; /);
        const signedIn = await visitor.signIn(user.email);
        expect(signedIn.status, signedIn.text).toBe(200);
        const cookies = signedIn.headers.getSetCookie();
        const session = cookies.find((c) => c.startsWith("__Host-kontor_session="))!;
        expect(cookies.find((c) => c.startsWith("__Host-kontor_csrf="))).toMatch(/Max-Age=0/);
        for (const cookie of [csrfCookie!, session]) {
          const attributes = cookie
            .split(";")
            .slice(1)
            .map((a) => a.trim().toLowerCase());
          expect(attributes).toEqual(
            expect.arrayContaining(["path=/", "secure", "httponly", "samesite=lax"]),
          );
          expect(attributes.some((a) => a.startsWith("domain="))).toBe(false);
        }
        expect(cookies.some((c) => /^kontor_(session|csrf)=/.test(c))).toBe(false);
        expect((await visitor.graphql("{ viewer { user { id } } }")).json.data.viewer.user.id).toBe(
          user.userId,
        );
        // The same token under the bare name is no session here (a session's request, its cookie unknown).
        const token = visitor.cookies.get("__Host-kontor_session")!;
        const bare = await fetch(`${server().url}/graphql`, {
          method: "POST",
          headers: {
            cookie: `kontor_session=${token}`,
            "x-csrf-token": visitor.csrf,
            "content-type": "application/json",
          },
          body: '{"query":"{ workspace { id } }"}',
        });
        expect(bare.status).toBe(401);
        expect(((await bare.json()) as any).errors[0].extensions.code).toBe("session_expired");
        const out = await visitor.api("POST", "/sign-out");
        expect(out.status).toBe(204);
        expect(out.headers.getSetCookie()).toEqual([
          expect.stringMatching(/^__Host-kontor_session=; .*Max-Age=0.*Secure/),
        ]);
      });
    });

    describe("in Chromium", () => {
      const browser = useChromium();
      let attacker: Awaited<ReturnType<typeof startAttackerPage>>;
      beforeAll(async () => {
        attacker = await startAttackerPage();
      });
      afterAll(async () => {
        await attacker?.close();
      });

      it("a page on another localhost port, with the signed-in session's cookie riding along, reads no CSRF token and mints no key", async () => {
        const victim = await createUser(server(), { label: "victim" });
        const db = server().running.db.prisma;
        const dashboardPage = await openDashboard(browser(), server());
        await signInUi(dashboardPage, victim.email);
        const cookies = await dashboardPage.context.cookies(server().url);
        expect(cookies.find((c) => c.name === "__Host-kontor_session")).toMatchObject({
          secure: true,
          httpOnly: true,
          sameSite: "Lax",
          path: "/",
        });

        // What reached the Kontor server from the other page, cookie or not.
        const reached: { request: string; status: number; cookie: boolean; site: string | undefined }[] = [];
        const record = (req: IncomingMessage, res: ServerResponse) => {
          if (req.headers.origin !== attacker.origin) return;
          res.on("finish", () =>
            reached.push({
              request: `${req.method} ${new URL(req.url ?? "/", "http://x").pathname}`,
              status: res.statusCode,
              cookie: (req.headers.cookie ?? "").includes("__Host-kontor_session="),
              site: req.headers["sec-fetch-site"] as string | undefined,
            }),
          );
        };
        server().running.server.on("request", record);
        const page = await dashboardPage.context.newPage();
        try {
          await page.goto(`${attacker.origin}/?kontor=${encodeURIComponent(server().url)}`);
          const handle = await page.waitForFunction(
            () => (window as unknown as { __result?: unknown }).__result,
            undefined,
            { timeout: 20_000 },
          );
          const result = (await handle.jsonValue()) as {
            session: { error?: string };
            csrf: string | null;
            graphql: { error?: string };
            simple: { type?: string };
          };
          expect(result.csrf).toBeNull();
          expect(result.session.error).toMatch(/Failed to fetch/);
          expect(result.graphql.error).toMatch(/Failed to fetch/);
          expect(result.simple.type).toBe("opaque");
          await expect.poll(() => reached.length).toBe(3);
        } finally {
          server().running.server.off("request", record);
          await page.close();
        }
        // The browser sent the cookie along (same site); the server refused what it received, and the
        // preflight of the JSON mutation did not approve credentials or X-CSRF-Token, so it was never sent.
        expect(reached).toEqual([
          { request: "GET /dashboard/api/session", status: 403, cookie: true, site: "same-site" },
          { request: "OPTIONS /graphql", status: 204, cookie: false, site: "same-site" },
          { request: "POST /v1/leads", status: 403, cookie: true, site: "same-site" },
        ]);
        expect(await db.apiKey.count({ where: { workspaceId: victim.workspaceId } })).toBe(0);
        expect(await db.lead.count({ where: { workspaceId: victim.workspaceId } })).toBe(0);

        // The dashboard itself, on its own origin, still works with the same session.
        await dashboardPage.goto("/dashboard/keys");
        await dashboardPage.page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
        await dashboardPage.page.getByText("No keys yet").waitFor();
        await dashboardPage.close();
      });
    });
  },
  { KONTOR_ENV: "production", KONTOR_SECRET_KEY: "cors-test-secret-key-0123456789abcdefghijkl" },
);
