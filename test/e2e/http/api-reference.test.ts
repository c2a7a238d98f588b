import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useChromium } from "../../support/chromium.ts";
import { e2e } from "../../support/suite.ts";

/**
 * `/docs`, the rendered API reference (server/rest/api-reference.ts): a public page, served with
 * Scalar's bundle from the installed package, that reaches no host but this server.
 */
e2e("API reference page", (server) => {
  describe("over HTTP", () => {
    it("answers the page without a credential, with a strict CSP and no CORS header", async () => {
      const response = await fetch(`${server().url}/docs`, {
        headers: { Origin: "https://elsewhere.example" },
      });
      const html = await response.text();
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp).toContain(`connect-src 'self' ${new URL(server().config.publicUrl).origin}`);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(html).toContain('href="/graphql"');
      expect(html).toContain("@kontor/sdk");
      expect(html).toContain("MCP: <code>POST /mcp</code>");
      // Every script or stylesheet the page names is on this server.
      expect(html).not.toMatch(/(src|href)="https?:/);
    });

    it("serves Scalar's bundle from the package and nothing else under /docs", async () => {
      const bundle = await fetch(`${server().url}/docs/standalone.js`);
      expect(bundle.status).toBe(200);
      expect(bundle.headers.get("content-type")).toMatch(/^text\/javascript/);
      expect(await bundle.text()).toContain("createApiReference");
      expect((await fetch(`${server().url}/docs/../package.json`)).status).toBe(404);
      expect((await fetch(`${server().url}/docs/standalone.js.map`)).status).toBe(404);
      const post = await fetch(`${server().url}/docs`, { method: "POST" });
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");
    });
  });

  describe("in Chromium", () => {
    const browser = useChromium();

    it("renders the API's title and its operations, asking no other host, logging no error", async () => {
      const origin = server().url;
      const isLocal = (url: string) =>
        url.startsWith(`${origin}/`) || url.startsWith(`blob:${origin}/`) || url.startsWith("data:");
      const context = await browser().newContext();
      // A request to another host is refused, so one cannot pass by luck, and recorded below.
      await context.route(
        (url) => !isLocal(url.href),
        (route) => route.abort("blockedbyclient"),
      );
      const page = await context.newPage();
      const requests: string[] = [];
      const errors: string[] = [];
      page.on("request", (request) => requests.push(request.url()));
      // A request the page's CSP refuses never starts: Chromium logs it as a console error instead.
      page.on("console", (message) => {
        if (message.type() === "error") errors.push(message.text());
      });
      page.on("pageerror", (error) => errors.push(error.message));
      try {
        const response = await page.goto(`${origin}/docs`, { waitUntil: "load" });
        expect(response?.status()).toBe(200);
        await page
          .getByRole("heading", { name: "Kontor API", exact: true })
          .first()
          .waitFor({ state: "visible", timeout: 30_000 });
        // The first tag is open; another opens from the sidebar.
        await page.getByText("Retrieve the workspace").first().waitFor({ state: "visible", timeout: 30_000 });
        await page.getByText("leads", { exact: true }).first().click();
        await page.getByText("List leads").first().waitFor({ state: "visible", timeout: 30_000 });
        await expect.poll(() => page.title()).toMatch(/Kontor API/);
        await expect(page.locator('a[href="/graphql"]').first().isVisible()).resolves.toBe(true);
        await page.waitForLoadState("networkidle");
        expect(requests.some((url) => url.startsWith(`${origin}/docs/standalone.js`))).toBe(true);
        expect(requests.some((url) => url === `${origin}/v1/openapi.json`)).toBe(true);
        expect(
          requests.filter((url) => !isLocal(url)),
          "requests that left the server",
        ).toEqual([]);
        expect(errors, "console errors").toEqual([]);
      } catch (error) {
        await page
          .screenshot({ path: join(tmpdir(), `kontor-api-reference-${server().stack}.png`) })
          .catch(() => {});
        throw error;
      } finally {
        await context.close();
      }
    });
  });
});

e2e(
  "API reference page under the per-address limit",
  (server) => {
    it("is counted like any request", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${server().url}/docs`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    });
  },
  { KONTOR_ADDRESS_REQUESTS_PER_MINUTE: "3" },
);
