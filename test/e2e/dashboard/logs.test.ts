import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import {
  type ApiSession,
  ARTIFACTS,
  addMember,
  countColour,
  createUser,
  type DashboardPage,
  distinctColours,
  expectLabelled,
  expireSessions,
  openDashboard,
  PASSWORD,
  pollUntil,
  readPng,
  screenshots,
  sessionGraphql,
  settle,
  signInApi,
  signInUi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The request logs screen in headless Chromium, on real requests made with two API keys
 * (successes, 400, 403 and 404s, in two batches a second apart): the server's totals and charts
 * (read back from the screenshot's pixels), the table with the requests' X-Request-Ids, paging
 * with Load more, each filter (key, status, route, time range) and the URL that keeps them, the
 * detail view by keyboard, the API's messages for bad filters, an empty result, an expired
 * session, and a member's read-only view.
 */

const browser = useChromium();

const UA = "kontor-logs-test/1.0 (detail view)";
const MISSING_LEAD = "lead_01J00000000000000000000000";
/** The screen's series colours (Logs.tsx COLOURS). */
const SERIES = { ok: "#2563eb", failed: "#dc2626", rate: "#c2410c", p95: "#7c3aed", endpoint: "#0891b2" };

interface Made {
  id: string;
  key: "a" | "b";
  status: number;
  route: string;
  batch: 1 | 2;
}

interface LogRow {
  request_id: string;
  key_id: string | null;
  method: string;
  route: string | null;
  status: number;
  latency_ms: number;
  error_code: string | null;
  client_ip: string | null;
  user_agent: string | null;
  created_at: string;
}

interface Stats {
  total: number;
  error_rate: number;
  latency_ms: { p50: number | null; p95: number | null };
  daily: { date: string; requests: number; errors: number }[];
  top_endpoints: { method: string; route: string; requests: number }[];
}

e2e("the dashboard's request logs", (server) => {
  let owner: TestUser;
  let session: ApiSession;
  const keys = {} as Record<"a" | "b", { id: string; secret: string }>;
  const made: Made[] = [];
  /** The first second of the second batch (every request of batch 1 arrived before it). */
  let boundary = 0;
  /** Every log row of the workspace, newest first, and the server's figures, as the API answers. */
  let all: LogRow[] = [];
  let stats: Stats;
  let dashboard: DashboardPage;

  const ids = (filter: (m: Made) => boolean) =>
    made
      .filter(filter)
      .map((m) => m.id)
      .sort();

  beforeAll(async () => {
    owner = await createUser(server(), { label: "logs-owner", workspaceName: "Log Watchers", plan: "pro" });
    session = await signInApi(server(), owner.email);
    for (const [name, label, scopes] of [
      ["a", "Billing sync", ["leads.read", "leads.write"]],
      ["b", "Reporting", ["leads.read"]],
    ] as const) {
      const { createApiKey } = await sessionGraphql<{
        createApiKey: { api_key: { id: string }; secret: string };
      }>(
        server(),
        session,
        "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { api_key { id } secret } }",
        { input: { name: label, scopes } },
      );
      keys[name] = { id: createApiKey.api_key.id, secret: createApiKey.secret };
    }
    const call = async (
      key: "a" | "b",
      batch: 1 | 2,
      route: string,
      path: string,
      init: RequestInit = {},
    ) => {
      const response = await fetch(`${server().api}${path}`, {
        ...init,
        headers: {
          Authorization: `Bearer ${keys[key].secret}`,
          "Content-Type": "application/json",
          ...init.headers,
        },
      });
      await response.arrayBuffer();
      made.push({ id: response.headers.get("x-request-id")!, key, status: response.status, route, batch });
      return response.status;
    };
    const times = async (n: number, run: () => Promise<number>, status: number) => {
      for (let i = 0; i < n; i++) expect(await run()).toBe(status);
    };

    // Batch 1: 22 requests, 2 of them refused (403).
    await times(12, () => call("a", 1, "/v1/leads", "/leads"), 200);
    await times(
      2,
      () =>
        call("a", 1, "/v1/leads", "/leads", {
          method: "POST",
          body: JSON.stringify({ full_name: "Logged Lead" }),
        }),
      201,
    );
    await times(6, () => call("b", 1, "/v1/leads", "/leads"), 200);
    await times(2, () => call("b", 1, "/v1/clients", "/clients"), 403);
    // The next whole second: batch 2 arrives after it, batch 1 before it.
    boundary = Math.ceil((Date.now() + 1) / 1000) * 1000;
    await pollUntil(async () => Date.now() >= boundary + 20, 2_000, 10);
    // Batch 2: 9 requests, 5 of them failed (400, 404s); one with a user agent of its own.
    await times(1, () => call("a", 2, "/v1/leads", "/leads", { method: "POST", body: "{}" }), 400);
    await times(2, () => call("a", 2, "/v1/leads/{id}", `/leads/${MISSING_LEAD}`), 404);
    await times(4, () => call("b", 2, "/v1/leads", "/leads"), 200);
    await times(1, () => call("b", 2, "/v1/leads/{id}", `/leads/${MISSING_LEAD}`), 404);
    await times(
      1,
      () => call("a", 2, "/v1/leads/{id}", `/leads/${MISSING_LEAD}`, { headers: { "User-Agent": UA } }),
      404,
    );
    expect(made.every((m) => /^req_[0-9A-Z]{26}$/.test(m.id))).toBe(true);

    // Logs are written in batches after the response: flush, and wait until the API lists them all.
    await pollUntil(async () => {
      await flushRequestLogs(server().running.db);
      const { requestLogs } = await sessionGraphql<{ requestLogs: { data: LogRow[] } }>(
        server(),
        session,
        "{ requestLogs(limit: 100) { data { request_id key_id method route status latency_ms error_code client_ip user_agent created_at } } }",
      );
      all = requestLogs.data;
      return all.length === made.length;
    }, 10_000);
    expect(all.map((row) => row.request_id).sort()).toEqual(ids(() => true));
    ({ requestLogStats: stats } = await sessionGraphql<{ requestLogStats: Stats }>(
      server(),
      session,
      "{ requestLogStats(days: 7) { total error_rate latency_ms { p50 p95 } daily { date requests errors } top_endpoints { method route requests } } }",
    ));
    expect(stats.total).toBe(31);

    dashboard = await openDashboard(browser(), server());
    await signInUi(dashboard, owner.email);
  });

  afterAll(async () => {
    await dashboard?.close();
  });

  /** The request ids in the table, in order. */
  const shownIds = () => dashboard.page.getByRole("link", { name: /^Details of req_/ }).allTextContents();
  const shownSorted = async () => (await shownIds()).sort();

  const openLogs = async (search = "") => {
    await dashboard.goto(`/dashboard/logs${search}`);
    await dashboard.page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
  };

  /**
   * A time as the browser's datetime-local value (its time zone, to the second), normalized as
   * HTML normalizes that value: without the seconds when they are 0.
   */
  const localInput = (ms: number) =>
    dashboard.page.evaluate((at) => {
      const d = new Date(at);
      const p = (n: number) => String(n).padStart(2, "0");
      const seconds = d.getSeconds() === 0 ? "" : `:${p(d.getSeconds())}`;
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}${seconds}`;
    }, ms);

  const applyFilters = async () => {
    await dashboard.page.getByRole("button", { name: "Apply filters" }).click();
  };

  it("shows the server's totals, charts and top endpoints, and a table of the requests with their X-Request-Ids (screenshots)", async () => {
    const { page } = dashboard;
    await page.getByRole("link", { name: "Logs", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
    await expect.poll(() => shownIds()).toHaveLength(25);

    // The totals are the API's.
    expect(await page.getByTestId("logs-total").textContent()).toBe("31");
    const rate = (await page.getByTestId("logs-error-rate").textContent())!;
    expect(rate).toContain("(7 errors)");
    expect(Number(rate.split(" %")[0])).toBeCloseTo(stats.error_rate * 100, 2);
    expect(stats.error_rate).toBeCloseTo(7 / 31, 4);
    const ms = async (id: string) =>
      Number((await page.getByTestId(id).textContent())!.replace(/[^\d.]/g, ""));
    expect(await ms("logs-p50")).toBeCloseTo(stats.latency_ms.p50!, 2);
    expect(await ms("logs-p95")).toBeCloseTo(stats.latency_ms.p95!, 2);

    // Three charts drawn on a canvas with a text alternative, and the top endpoints as bars of text.
    const canvases = page.getByTestId("logs-charts").locator("canvas");
    await expect.poll(() => canvases.count()).toBe(3);
    expect(await canvases.first().getAttribute("aria-label")).toContain("31 requests, 7 errors");

    // The figures as tables: today's row and the top endpoints are the API's.
    await page.getByText("The figures as tables").click();
    const today = stats.daily.at(-1)!;
    expect(today).toMatchObject({ requests: 31, errors: 7 });
    const dayCells = await page
      .getByRole("region", { name: "Requests per day" })
      .getByRole("row")
      .filter({ hasText: today.date })
      .locator("td")
      .allTextContents();
    expect(dayCells.slice(0, 3)).toEqual([today.date, "31", "7"]);
    const endpointRows = page
      .getByRole("region", { name: "Top endpoints" })
      .getByRole("row")
      .filter({ has: page.locator("td") });
    const endpoints = await endpointRows.evaluateAll((rows) =>
      rows.map((row) => [...row.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent)),
    );
    expect(endpoints).toEqual(stats.top_endpoints.map((e) => [`${e.method} ${e.route}`, String(e.requests)]));
    expect(stats.top_endpoints[0]).toEqual({ method: "GET", route: "/v1/leads", requests: 22 });
    await page.getByText("The figures as tables").click();

    // The table: the newest 25 requests in the API's order, each id an X-Request-Id of a request made here.
    expect(await shownIds()).toEqual(all.slice(0, 25).map((row) => row.request_id));
    expect(made.map((m) => m.id)).toEqual(expect.arrayContaining(await shownIds()));
    expect(await page.getByRole("status").filter({ hasText: "Showing 25 requests" }).textContent()).toContain(
      "more follow",
    );
    const newest = page.getByRole("row").filter({ hasText: all[0]!.request_id });
    const cells = await newest.locator("td").allTextContents();
    expect(cells[1]).toBe("GET /v1/leads/{id}");
    expect(cells[2]).toBe("404");
    expect(cells[3]!.replace(/\D/g, "")).toBe(String(all[0]!.latency_ms));
    expect(cells[4]).toBe("Billing sync");

    expect(await expectLabelled(page)).toEqual([
      "Workspace",
      "Period",
      "Key",
      "Outcome",
      "Status",
      "Route",
      "From",
      "To",
    ]);
    await screenshots(page, "logs");

    // Another period: the server's figures over 30 days, kept in the URL.
    await page.getByLabel("Period").selectOption({ label: "Last 30 days" });
    await expect.poll(() => canvases.first().getAttribute("aria-label")).toContain("the last 30 days");
    expect(new URL(page.url()).searchParams.get("days")).toBe("30");
    expect(await page.getByTestId("logs-total").textContent()).toBe("31");
  });

  it("draws the charts: the screenshot of the charts holds each series' colour, in proportion to the data", async () => {
    const { page } = dashboard;
    await openLogs();
    const charts = page.getByTestId("logs-charts");
    await expect.poll(() => charts.locator("canvas").count()).toBe(3);
    const path = join(ARTIFACTS, "logs-charts-1280.png");
    await charts.screenshot({ path });
    const png = readPng(path);
    expect(distinctColours(png)).toBeGreaterThan(40);
    const count = Object.fromEntries(
      Object.entries(SERIES).map(([name, hex]) => [name, countColour(png, hex, 12)]),
    ) as Record<keyof typeof SERIES, number>;
    // A legend's swatch is about 14 × 12 px: these are bars and lines, not only swatches.
    expect(count.ok, JSON.stringify(count)).toBeGreaterThan(1_000);
    expect(count.failed, JSON.stringify(count)).toBeGreaterThan(300);
    expect(count.endpoint, JSON.stringify(count)).toBeGreaterThan(1_000);
    expect(count.rate, JSON.stringify(count)).toBeGreaterThan(300);
    expect(stats.latency_ms.p95).toBeGreaterThan(0);
    expect(count.p95, JSON.stringify(count)).toBeGreaterThan(300);
    // 24 successes to 7 failures today: more blue than red.
    expect(count.ok).toBeGreaterThan(count.failed * 2);
  });

  it("writes the top endpoints' labels whole at 1280 and 390 px, and keeps the page under 4,400 px tall on a phone", async () => {
    const { page } = dashboard;
    await openLogs();
    await expect.poll(() => shownIds()).toHaveLength(25);
    const list = page.getByRole("list", { name: "Top endpoints" });
    await list.waitFor();
    const expected = stats.top_endpoints.map((e) => `${e.method} ${e.route}`);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await settle(page);
      const labels = await list.locator("li").evaluateAll((items) =>
        items.map((item) => {
          const label = item.querySelector<HTMLElement>(".logs-endpoint-label")!;
          const box = label.getBoundingClientRect();
          const frame = item.getBoundingClientRect();
          return {
            text: label.textContent,
            title: label.title,
            // Drawn whole: nothing hidden past its box, and its box inside the row.
            clipped:
              label.scrollWidth > label.clientWidth + 1 ||
              box.left < frame.left - 1 ||
              box.right > frame.right + 1,
          };
        }),
      );
      expect(labels.map((l) => l.text)).toEqual(expected);
      expect(labels.map((l) => l.title)).toEqual(expected);
      expect(
        labels.filter((l) => l.clipped),
        `labels cut at ${width} px`,
      ).toEqual([]);
    }
    // On a phone (8,354 px before): 25 requests as compact cards of three lines (≤ 85 px each:
    // 2,125 px), the filters (≤ 600 px), the traffic panel with its totals two by two, three charts
    // of 170 px and the endpoint bars (≤ 1,400 px), the top bar and headings (≤ 275 px): 4,400 px.
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    expect(height, "the logs page's height at 390 px").toBeLessThanOrEqual(4_400);
    const card = await page
      .getByRole("region", { name: "Requests" })
      .getByRole("row")
      .nth(1)
      .evaluate((row) => row.getBoundingClientRect().height);
    expect(card, "a request's card at 390 px").toBeLessThanOrEqual(85);
    await screenshots(page, "logs-phone");
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("pages through every request with Load more, newest first, without duplicates", async () => {
    const { page } = dashboard;
    await openLogs();
    await expect.poll(() => shownIds()).toHaveLength(25);
    await page.getByRole("button", { name: "Load more" }).click();
    await expect.poll(() => shownIds()).toHaveLength(31);
    const shown = await shownIds();
    expect(new Set(shown).size).toBe(31);
    expect(shown).toEqual(all.map((row) => row.request_id));
    await page.getByRole("status").filter({ hasText: "Showing 31 requests, newest first." }).waitFor();
    expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(0);
  });

  it("filters by key, status, route and time range: each narrows the table to the requests made so, and the URL keeps the filters", async () => {
    const { page } = dashboard;
    await openLogs();
    await expect.poll(() => shownIds()).toHaveLength(25);

    // Key (an owner picks it by name).
    await page.getByLabel("Key", { exact: true }).selectOption({ label: (await optionLabel("Reporting"))! });
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.key === "b"));
    expect(new URL(page.url()).searchParams.get("key")).toBe(keys.b.id);
    // The charts follow the key: its total.
    await expect.poll(() => page.getByTestId("logs-total").textContent()).toBe("13");

    // Status, together with the key.
    await page.getByLabel("Status", { exact: true }).fill("404");
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.key === "b" && m.status === 404));
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => page.url()).toMatch(/\/dashboard\/logs$/);
    await expect.poll(() => shownIds()).toHaveLength(25);

    // Outcome: failed (4xx–5xx), then succeeded, kept in the URL as the API's argument.
    await page.getByLabel("Outcome", { exact: true }).selectOption({ label: "Failed (4xx–5xx)" });
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.status >= 400));
    expect(new URL(page.url()).searchParams.get("outcome")).toBe("failed");
    await page.getByLabel("Outcome", { exact: true }).selectOption({ label: "Succeeded (2xx–3xx)" });
    await page.getByLabel("Route", { exact: true }).fill("/v1/leads");
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.status < 400 && m.route === "/v1/leads"));
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => page.url()).toMatch(/\/dashboard\/logs$/);

    // Route.
    await page.getByLabel("Route", { exact: true }).fill("/v1/clients");
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.route === "/v1/clients"));
    expect(await page.getByRole("row").filter({ hasText: "GET /v1/clients" }).count()).toBe(2);

    // Time range: from the boundary on, then up to it.
    await page.getByLabel("Route", { exact: true }).fill("");
    await page.getByLabel("From", { exact: true }).fill(await localInput(boundary));
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.batch === 2));
    expect(new URL(page.url()).searchParams.get("from")).toBe(new Date(boundary).toISOString());
    await page.getByLabel("From", { exact: true }).fill("");
    await page.getByLabel("To", { exact: true }).fill(await localInput(boundary));
    await applyFilters();
    await expect.poll(shownSorted).toEqual(ids((m) => m.batch === 1));

    // A shared link reproduces the view: the fields and the rows.
    const link = `/dashboard/logs?${new URLSearchParams({ key: keys.a.id, route: "/v1/leads/{id}", from: new Date(boundary - 60_000).toISOString() })}`;
    await openLogs(link.slice("/dashboard/logs".length));
    await expect.poll(shownSorted).toEqual(ids((m) => m.key === "a" && m.route === "/v1/leads/{id}"));
    expect(await page.getByLabel("Key", { exact: true }).inputValue()).toBe(keys.a.id);
    expect(await page.getByLabel("Route", { exact: true }).inputValue()).toBe("/v1/leads/{id}");
    expect(await page.getByLabel("From", { exact: true }).inputValue()).toBe(
      await localInput(boundary - 60_000),
    );
    await screenshots(page, "logs-filtered");
  });

  /** The label of the key select's option for a key name. */
  async function optionLabel(name: string) {
    const labels = await dashboard.page
      .getByLabel("Key", { exact: true })
      .locator("option")
      .allTextContents();
    return labels.find((label) => label.startsWith(`${name} · `));
  }

  it("opens a request's own page from its row with the keyboard: every field, the key's name; Back returns to the filtered list, and the page opens by its URL", async () => {
    const { page } = dashboard;
    await openLogs("?outcome=failed");
    const target = all.find((row) => row.user_agent === UA)!;
    expect(target.request_id).toBe(made.at(-1)!.id);
    const link = page.getByRole("link", { name: `Details of ${target.request_id}` });
    await link.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Request" }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/logs/${target.request_id}`);
    const details = page.getByRole("definition").first();
    await details.waitFor();
    const readFields = async () =>
      Object.fromEntries(
        await page
          .locator("dl.logs-detail > div")
          .evaluateAll((items) =>
            items.map((item) => [
              item.querySelector("dt")!.textContent,
              item.querySelector("dd")!.textContent,
            ]),
          ),
      ) as Record<string, string>;
    await expect.poll(async () => (await readFields()).Key).toBe(`Billing sync ${keys.a.id} Only this key`);
    const fields = await readFields();
    expect(Object.keys(fields)).toEqual([
      "Request id",
      "Time",
      "Method",
      "Route",
      "Status",
      "Latency",
      "Error code",
      "Key",
      "Client IP",
      "User agent",
      "Model",
      "Input tokens",
      "Output tokens",
    ]);
    expect(fields["Request id"]).toBe(target.request_id);
    expect(fields.Time).toContain(target.created_at);
    expect(fields.Method).toBe("GET");
    expect(fields.Route).toBe("/v1/leads/{id} Only this route");
    expect(fields.Status).toBe("404");
    expect(fields.Latency!.replace(/\D/g, "")).toBe(String(target.latency_ms));
    expect(fields["Error code"]).toBe("not_found");
    expect(fields["Client IP"]).toBe(target.client_ip);
    expect(fields["Client IP"]).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(fields["User agent"]).toBe(UA);
    expect([fields.Model, fields["Input tokens"], fields["Output tokens"]]).toEqual(["none", "none", "none"]);
    await screenshots(page, "logs-request");

    // Back: the list as it was, filter included.
    await page.goBack();
    await page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
    expect(new URL(page.url()).searchParams.get("outcome")).toBe("failed");
    await expect.poll(shownSorted).toEqual(ids((m) => m.status >= 400));

    // By its URL, and "Only this key" filters the list by the request's key.
    await dashboard.goto(`/dashboard/logs/${target.request_id}`);
    await page.getByRole("link", { name: "Only this key" }).click();
    await page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
    await expect.poll(shownSorted).toEqual(ids((m) => m.key === "a"));
    expect(new URL(page.url()).searchParams.get("key")).toBe(keys.a.id);

    // A request id that is not in the logs says so.
    await dashboard.goto(`/dashboard/logs/req_01J00000000000000000000000`);
    await page.getByText(/No request req_01J00000000000000000000000 in this workspace's logs/).waitFor();
  });

  it("shows the API's message under the field for a bad filter (status 700, To before From), and says so when nothing matches", async () => {
    const { page } = dashboard;
    await openLogs();
    await expect.poll(() => shownIds()).toHaveLength(25);

    await page.getByLabel("Status", { exact: true }).fill("700");
    await applyFilters();
    // Once, under the field it is about (read out as an alert), not again in a banner.
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe("status must be an HTTP status code from 100 to 599.");
    await expect
      .poll(() => page.getByLabel("Status", { exact: true }).getAttribute("aria-invalid"))
      .toBe("true");
    expect(await page.getByText("status must be an HTTP status code from 100 to 599.").count()).toBe(1);
    expect(await shownIds()).toEqual([]);
    await screenshots(page, "logs-bad-filter");

    await page.getByLabel("Status", { exact: true }).fill("");
    await page.getByLabel("From", { exact: true }).fill(await localInput(boundary));
    await page.getByLabel("To", { exact: true }).fill(await localInput(boundary - 3_600_000));
    await applyFilters();
    await expect.poll(() => page.getByLabel("To", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByRole("alert").textContent()).toContain("to must not be before from.");
    expect(await page.getByLabel("Status", { exact: true }).getAttribute("aria-invalid")).toBeNull();

    // A filter that matches nothing.
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.getByLabel("Status", { exact: true }).fill("418");
    await applyFilters();
    await page.getByText("No requests match these filters.").waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await shownIds()).toEqual([]);
    await screenshots(page, "logs-empty");
  });

  it("sends the user to sign-in when the session expired, and back to the same filtered logs after signing in", async () => {
    const { page } = dashboard;
    await openLogs("?status=404");
    await expect.poll(shownSorted).toEqual(ids((m) => m.status === 404));
    expect(await expireSessions(server(), owner.userId)).toBeGreaterThanOrEqual(1);
    dashboard.allowErrors(/status of 401/);
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await expect
      .poll(() => page.getByRole("status").filter({ hasText: "Your session has expired" }).count())
      .toBe(1);
    expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard/logs?status=404");
    await page.getByLabel("E-mail").fill(owner.email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
    expect(await page.getByLabel("Status", { exact: true }).inputValue()).toBe("404");
    await expect.poll(shownSorted).toEqual(ids((m) => m.status === 404));
  });

  describe("as a member", () => {
    let member: TestUser;
    beforeAll(async () => {
      member = await createUser(server(), { label: "logs-member" });
      await addMember(server(), owner, member, "member");
    });

    it("sees the same logs and charts, read-only, and filters by a key id typed in", async () => {
      const view = await openDashboard(browser(), server());
      const { page } = view;
      await signInUi(view, member.email);
      // Their own workspace has had no requests: the screen says so.
      await page.getByLabel("Workspace").selectOption({ label: `${member.workspaceName} (owner)` });
      await page.getByRole("link", { name: "Logs", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Request logs" }).waitFor();
      await page.getByText("No requests in the last 7 days (UTC): nothing to chart yet.").waitFor();
      await page
        .getByText(/^No requests in the last 30 days\. Requests made with this workspace's API keys/)
        .waitFor();
      expect(await page.getByTestId("logs-total").textContent()).toBe("0");
      // In the owner's workspace the member sees everything.
      await page.getByLabel("Workspace").selectOption({ label: "Log Watchers (member)" });
      const details = page.getByRole("link", { name: /^Details of req_/ });
      await expect
        .poll(() => details.allTextContents())
        .toEqual(all.slice(0, 25).map((row) => row.request_id));
      expect(await page.getByTestId("logs-total").textContent()).toBe("31");
      await expect.poll(() => page.getByTestId("logs-charts").locator("canvas").count()).toBe(3);
      // No key names for a member (apiKeys is owner-only): the key's id, shortened, and a text field for it.
      const cells = await page
        .getByRole("row")
        .filter({ hasText: all[0]!.request_id })
        .locator("td")
        .allTextContents();
      expect(cells[4]).toBe(`${keys.a.id.slice(0, 8)}…${keys.a.id.slice(-4)}`);
      expect(await expectLabelled(page)).toEqual([
        "Workspace",
        "Period",
        "Key id",
        "Outcome",
        "Status",
        "Route",
        "From",
        "To",
      ]);
      await page.getByLabel("Key id", { exact: true }).fill(keys.b.id);
      await page.getByRole("button", { name: "Apply filters" }).click();
      await expect
        .poll(async () => (await details.allTextContents()).sort())
        .toEqual(ids((m) => m.key === "b"));
      await expect.poll(() => page.getByTestId("logs-total").textContent()).toBe("13");
      // A key id that is not one: the API's message under the field.
      await page.getByLabel("Key id", { exact: true }).fill("nonsense");
      await page.getByRole("button", { name: "Apply filters" }).click();
      await expect
        .poll(() => page.getByLabel("Key id", { exact: true }).getAttribute("aria-invalid"))
        .toBe("true");
      expect(await page.getByRole("alert").textContent()).toContain("key_id must be an API key id (key_…).");
      await page.getByLabel("Key id", { exact: true }).fill("");
      await page.getByRole("button", { name: "Apply filters" }).click();
      await expect.poll(() => details.count()).toBe(25);
      await screenshots(page, "logs-member");
      // A request's page: the key's id, without a name, for a member.
      await view.goto(`/dashboard/logs/${all[0]!.request_id}`);
      await page.getByText("Only this key").waitFor();
      expect(
        await page.locator("dl.logs-detail > div").filter({ hasText: "Key" }).locator("dd").textContent(),
      ).toBe(`${keys.a.id} Only this key`);
      await view.close();
    });
  });
});
