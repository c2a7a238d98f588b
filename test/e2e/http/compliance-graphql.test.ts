/** GraphQL over HTTP (the graphql-http audit) and GraphiQL in a browser; the OpenAPI document: compliance-openapi.test.ts. */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AuditResult, auditServer } from "graphql-http";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../support/chromium.ts";
import { call, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

type Json = Record<string, any>;

e2e("compliance: GraphQL", (server) => {
  let tenant: Tenant;

  beforeAll(async () => {
    tenant = await server().tenant();
  });

  describe("GraphQL over HTTP (graphql-http audit)", () => {
    it("passes every required audit with an API key on each request", async () => {
      const fetchFn: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set("authorization", `Bearer ${tenant.key}`);
        return fetch(input, { ...init, headers });
      };
      const results: AuditResult[] = await auditServer({ url: `${server().url}/graphql`, fetchFn });
      expect(results.length).toBeGreaterThan(0);

      const failed = results.filter((r) => r.status === "error");
      const warned = results.filter((r) => r.status === "warn" || r.status === "notice");
      if (warned.length > 0) {
        console.info(
          `graphql-http audit [${server().stack}]: ${warned.length} warning(s)/notice(s) (allowed):\n` +
            warned
              .map((r) => `  - ${r.status} ${r.id} ${r.name}${"reason" in r ? `: ${r.reason}` : ""}`)
              .join("\n"),
        );
      }
      const describeFailure = (r: AuditResult) => `${r.id} ${r.name}${"reason" in r ? ` — ${r.reason}` : ""}`;
      expect(
        failed.map(describeFailure),
        `graphql-http audit errors:\n${failed.map(describeFailure).join("\n")}`,
      ).toEqual([]);
      expect(results.filter((r) => r.status === "ok").length).toBeGreaterThan(results.length / 2);
    });

    it("the audit's requests really are authenticated (without a key the endpoint answers 401)", async () => {
      const res = await call("POST", `${server().url}/graphql`, { body: { query: "{ __typename }" } });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
    });
  });

  describe("GraphiQL in a browser", () => {
    let browser: Browser | undefined;

    beforeAll(async () => {
      browser = await launchChromium();
    });

    afterAll(async () => {
      await browser?.close();
    });

    /**
     * Opens GraphiQL in a fresh browser context. Every request is recorded; any that would leave
     * the server is refused (so a CDN reference cannot pass by luck) and still recorded.
     */
    async function withGraphiQL(
      path: string,
      body: (
        page: Page,
        seen: { requests: string[]; badAssets: string[]; pageErrors: string[] },
      ) => Promise<void>,
    ) {
      const origin = server().url;
      const isLocal = (url: string) => url.startsWith(`${origin}/`) || url.startsWith(`blob:${origin}/`);
      const context = await browser!.newContext();
      const seen = { requests: [] as string[], badAssets: [] as string[], pageErrors: [] as string[] };
      await context.route(
        (url) => !isLocal(url.href) && !url.href.startsWith("data:"),
        (route) => route.abort("blockedbyclient"),
      );
      const page = await context.newPage();
      page.on("request", (request) => seen.requests.push(request.url()));
      page.on("response", (response) => {
        if (response.url().startsWith(`${origin}/graphiql/`) && response.status() !== 200)
          seen.badAssets.push(`${response.status()} ${response.url()}`);
      });
      page.on("requestfailed", (request) => {
        if (request.url().startsWith(`${origin}/graphiql/`))
          seen.badAssets.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
      });
      page.on("pageerror", (error) => seen.pageErrors.push(error.message));
      try {
        const response = await page.goto(`${origin}${path}`, { waitUntil: "load" });
        expect(response?.status(), `GET ${path} from a browser`).toBe(200);
        expect(response?.headers()["content-type"]).toMatch(/^text\/html/);
        await waitForGraphiQL(page);
        await body(page, seen);
        const remote = seen.requests.filter((url) => !isLocal(url) && !url.startsWith("data:"));
        expect(remote, "requests that left the server").toEqual([]);
      } catch (error) {
        await page
          .screenshot({ path: join(tmpdir(), `kontor-graphiql-${server().stack}.png`) })
          .catch(() => {});
        throw error;
      } finally {
        await context.close();
      }
    }

    async function waitForGraphiQL(page: Page) {
      await page.locator("#root .graphiql-container").first().waitFor({ state: "visible", timeout: 30_000 });
      await page
        .locator(".graphiql-query-editor .monaco-editor")
        .first()
        .waitFor({ state: "visible", timeout: 30_000 });
      await page.locator(".graphiql-execute-button").first().waitFor({ state: "visible", timeout: 30_000 });
    }

    /** Replaces a Monaco editor's text. Monaco may auto-close brackets, so whatever follows the cursor is removed. */
    async function replaceEditorText(page: Page, editor: ReturnType<Page["locator"]>, text: string) {
      await editor.click();
      await page.keyboard.press("ControlOrMeta+A");
      await page.keyboard.press("Delete");
      await page.keyboard.insertText(text);
      await page.keyboard.press("Shift+ControlOrMeta+End");
      await page.keyboard.press("Delete");
    }

    /** The visible text of a Monaco editor, with its non-breaking spaces made plain. */
    const editorText = async (editor: ReturnType<Page["locator"]>) =>
      (await editor.locator(".view-lines").first().innerText()).replace(/\u00a0/g, " ");

    it("renders from the server's own assets and runs a query with the key set in the Headers editor", async () => {
      const origin = server().url;
      const workspace = (await rest(server().api, tenant.key).get("/workspace")).body;
      expect(workspace.name).toMatch(/^Test /);

      await withGraphiQL("/graphql", async (page, seen) => {
        expect(await page.title()).toBe("Kontor GraphQL");
        expect(
          seen.requests.some((url) => url.startsWith(`${origin}/graphiql/`) && url.endsWith(".js")),
        ).toBe(true);
        expect(
          seen.requests.some((url) => url.startsWith(`${origin}/graphiql/`) && url.endsWith(".css")),
        ).toBe(true);

        const query = "query Mine { workspace { id name } }";
        await replaceEditorText(page, page.locator(".graphiql-query-editor .monaco-editor").first(), query);
        // GraphiQL mirrors the query editor into ?query=, which shows what the editor now holds.
        await expect
          .poll(() => new URL(page.url()).searchParams.get("query"), { timeout: 30_000 })
          .toBe(query);

        await page.locator('button[data-name="headers"]').first().click();
        const headersEditor = page
          .locator(
            'section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .monaco-editor',
          )
          .first();
        await headersEditor.waitFor({ state: "visible", timeout: 30_000 });
        await replaceEditorText(
          page,
          headersEditor,
          JSON.stringify({ Authorization: `Bearer ${tenant.key}` }),
        );

        const executed = page.waitForResponse(
          (res) =>
            res.url().startsWith(`${origin}/graphql`) &&
            res.request().method() === "POST" &&
            (res.request().postData() ?? "").includes("Mine"),
          { timeout: 30_000 },
        );
        await page.locator(".graphiql-execute-button").first().click();
        const result = await executed;
        expect(result.request().headers().authorization).toBe(`Bearer ${tenant.key}`);
        expect(result.status()).toBe(200);
        const json = (await result.json()) as Json;
        expect(json.errors).toBeUndefined();
        expect(json.data).toEqual({ workspace: { id: tenant.workspaceId, name: workspace.name } });

        const pane = page.locator(".graphiql-response .monaco-editor").first();
        await expect
          .poll(() => editorText(pane), { timeout: 30_000 })
          .toContain(`"name": "${workspace.name}"`);
        expect(await editorText(pane)).toContain(`"id": "${tenant.workspaceId}"`);
        if (seen.pageErrors.length > 0)
          console.info(
            `GraphiQL page errors [${server().stack}]:\n${seen.pageErrors.map((e) => `  - ${e}`).join("\n")}`,
          );
      });
    }, 120_000);

    it("serves every asset the page loads, including the Monaco workers", async () => {
      const origin = server().url;
      const html = await (await fetch(`${origin}/graphql`, { headers: { accept: "text/html" } })).text();
      expect(html).not.toMatch(/unpkg\.com|jsdelivr|githubusercontent|https?:\/\/(?!localhost)/);
      const referenced = [...html.matchAll(/(?:href|src)=["']?([^"'\s>]+)|"(\/graphiql\/[^"]+)"/g)].map(
        (m) => m[1] ?? m[2]!,
      );
      expect(referenced.filter((u) => u.startsWith("/graphiql/")).length).toBeGreaterThanOrEqual(5);
      const broken: string[] = [];
      for (const url of referenced) {
        const res = await fetch(new URL(url, `${origin}/graphql`));
        await res.arrayBuffer();
        if (res.status !== 200) broken.push(`${res.status} ${url}`);
      }
      expect(broken, "assets the GraphiQL page references that the server does not serve").toEqual([]);

      await withGraphiQL("/graphql", async (_page, seen) => {
        expect(seen.badAssets, "assets the browser failed to load").toEqual([]);
      });
    }, 120_000);

    it("shows Kontor's title while it loads, never a template placeholder", async () => {
      const origin = server().url;
      const html = await (await fetch(`${origin}/graphql`, { headers: { accept: "text/html" } })).text();
      expect(html).not.toMatch(/__[A-Z]+__/);
      // GraphiQL's bundle held back: the page stays on what the server sent before any script ran.
      const context = await browser!.newContext();
      try {
        await context.route(
          (url) => url.pathname.startsWith("/graphiql/") && url.pathname.endsWith(".js"),
          (route) => route.abort("blockedbyclient"),
        );
        await context.route(
          (url) => !url.href.startsWith(`${origin}/`),
          (route) => route.abort("blockedbyclient"),
        );
        const page = await context.newPage();
        const response = await page.goto(`${origin}/graphql`, { waitUntil: "load" });
        expect(response?.status()).toBe(200);
        expect(await page.title()).toBe("Kontor GraphQL");
        expect((await page.locator("#root").innerText()).trim()).toBe("Loading Kontor GraphQL...");
      } finally {
        await context.close();
      }
    }, 120_000);

    it("opens with Kontor's default query, which tells where to put the key", async () => {
      await withGraphiQL("/graphql", async (page) => {
        const editor = page.locator(".graphiql-query-editor .monaco-editor").first();
        await expect
          .poll(() => editorText(editor), { timeout: 15_000 })
          .toContain("Add your key in the Headers tab");
        expect(await editorText(editor)).toContain("workspace { id name plan }");
      });
    }, 120_000);

    it("still renders after a reload once GraphiQL has put the edited query into the URL", async () => {
      const query = "{ workspace { name } }";
      await withGraphiQL(`/graphql?query=${encodeURIComponent(query)}`, async (page) => {
        await expect
          .poll(() => new URL(page.url()).searchParams.get("query"), { timeout: 30_000 })
          .toBe(query);
      });
    }, 120_000);
  });
});
