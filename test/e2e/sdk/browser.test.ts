import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchChromium } from "../../support/chromium.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const DIST = fileURLToPath(new URL("../../../sdk/dist/", import.meta.url));

/** The page: imports the built package as a browser would, and runs a few calls against the server. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>SDK</title>
<script type="module">
  import { Kontor, WebhookVerificationError } from "/sdk/index.js";
  const params = new URLSearchParams(location.search);
  const run = async () => {
    const kontor = new Kontor({ apiKey: params.get("key"), baseUrl: params.get("api") });
    const workspace = await kontor.workspace.retrieve();
    const lead = await kontor.leads.create({ full_name: "Browser Lead", stage: "won" });
    const names = [];
    for await (const each of kontor.leads.list({ stage: "won" })) names.push(each.full_name);
    let missing;
    try {
      await kontor.leads.retrieve("lead_01J00000000000000000000000");
    } catch (error) {
      missing = { name: error.constructor.name, status: error.status, code: error.code };
    }
    const secret = "whsec_" + btoa("0123456789abcdef0123456789abcdef");
    const body = JSON.stringify({ id: "evt_1", object: "event", type: "lead.created", created_at: new Date().toISOString(), workspace_id: workspace.id, data: { object: lead } });
    const headers = await Kontor.webhooks.sign(body, secret, { eventId: "evt_1", eventType: "lead.created" });
    const event = await Kontor.webhooks.verify(body, headers, secret);
    let tampered;
    try {
      await Kontor.webhooks.verify(body.replace("Browser", "Forged"), headers, secret);
    } catch (error) {
      tampered = error instanceof WebhookVerificationError ? error.reason : String(error);
    }
    return { workspace: workspace.id, lead: lead.id, names, missing, verified: event.data.object.id, tampered };
  };
  run().then((result) => (window.__result = result), (error) => (window.__result = { error: String(error && error.stack || error) }));
</script>`;

const TYPES: Record<string, string> = { ".js": "text/javascript", ".html": "text/html" };

/** Serves the page and sdk/dist on another origin than the API: the calls are cross-origin, as from a web app. */
async function startPageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (path === "/") return void res.writeHead(200, { "content-type": TYPES[".html"] }).end(PAGE);
    const file = normalize(join(DIST, path.replace(/^\/sdk\//, "")));
    if (!path.startsWith("/sdk/") || !file.startsWith(DIST)) return void res.writeHead(404).end();
    try {
      res
        .writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" })
        .end(await readFile(file));
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

e2e("the SDK in headless Chromium", (server) => {
  let browser: Browser;
  let page: Awaited<ReturnType<typeof startPageServer>>;
  let tenant: Tenant;

  beforeAll(async () => {
    [browser, page, tenant] = await Promise.all([launchChromium(), startPageServer(), server().tenant()]);
  });

  afterAll(async () => {
    await browser?.close();
    await page?.close();
  });

  it("loads the built package as an ES module and calls the API from another origin: REST, pages, errors, webhook signatures", async () => {
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(String(error)));
    await tab.goto(`${page.origin}/?${new URLSearchParams({ key: tenant.key, api: server().api })}`);
    const result = (await tab
      .waitForFunction(() => (window as unknown as { __result?: unknown }).__result, undefined, {
        timeout: 20_000,
      })
      .then((h) => h.jsonValue())) as Record<string, unknown>;
    expect(result.error, String(result.error)).toBeUndefined();
    expect(errors).toEqual([]);
    expect(result.workspace).toBe(tenant.workspaceId);
    expect(result.lead).toMatch(/^lead_/);
    expect(result.names).toEqual(["Browser Lead"]);
    expect(result.missing).toEqual({ name: "NotFoundError", status: 404, code: "not_found" });
    expect(result.verified).toBe(result.lead);
    expect(result.tampered).toBe("invalid_signature");
    await tab.close();
  });
});
