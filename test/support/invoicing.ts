import { expect } from "vitest";
import type { ApiResponse } from "./http.ts";
import type { TestServer } from "./server.ts";
import type { Api } from "./workspace.ts";

/** Helpers shared by the invoicing suites (test/e2e/invoicing/). */

export { ISO } from "./assertions.ts";
export type { Api } from "./workspace.ts";
export const NEVER_INVOICE = "inv_01J00000000000000000000000";

export const today = () => new Date().toISOString().slice(0, 10);
export const year = () => new Date().getUTCFullYear();

/** The README's sample: lines totalling 1200. */
export const SAMPLE_ITEMS = [
  { description: "Website design", quantity: 10, unit_price: 100 },
  { description: "Hosting, one year", quantity: 2, unit_price: 100 },
];

export async function newClient(api: Api, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post("/clients", { name: "Ada Industries", ...body });
  expect(res.status).toBe(201);
  return res.body.id;
}

export async function newDocument(api: Api, body: Record<string, unknown>) {
  const res = await api.post("/invoices", {
    items: [{ description: "Work", quantity: 1, unit_price: 100 }],
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export async function post(api: Api, path: string, body?: unknown) {
  const res = await api.post(path, body);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

export function expectError(res: ApiResponse, status: number, code: string, param?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error).toMatchObject({ code, ...(param !== undefined && { param }) });
  expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
}

/** Everything a workspace's invoicing has written: compared before and after a request that must write nothing. */
export async function stored(server: TestServer, workspaceId: string) {
  const prisma = server.running.db.prisma;
  const rows = {
    invoices: await prisma.invoice.findMany({
      where: { workspaceId },
      include: { items: { orderBy: { position: "asc" } }, payments: { orderBy: { id: "asc" } } },
      orderBy: { id: "asc" },
    }),
    sequences: await prisma.documentSequence.findMany({
      where: { workspaceId },
      orderBy: [{ documentType: "asc" }, { year: "asc" }],
    }),
    // dispatched_at is the webhook worker's bookkeeping, set whenever it runs: not what a request wrote.
    events: await prisma.event.findMany({
      where: { workspaceId },
      orderBy: { id: "asc" },
      omit: { dispatchedAt: true },
    }),
  };
  return JSON.parse(JSON.stringify(rows)) as typeof rows;
}

export async function eventsOf(server: TestServer, workspaceId: string, type?: string) {
  return server.running.db.prisma.event.findMany({
    where: { workspaceId, ...(type && { type }) },
    orderBy: { id: "asc" },
  });
}

/** The one event of `type` written since `before` (a list of earlier event ids). */
export async function newEvent(server: TestServer, workspaceId: string, type: string, before: string[]) {
  const fresh = (await eventsOf(server, workspaceId, type)).filter((event) => !before.includes(event.id));
  expect(fresh, `one new ${type} event`).toHaveLength(1);
  return fresh[0]!;
}
