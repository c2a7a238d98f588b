import { beforeAll, expect } from "vitest";
import { rest } from "./http.ts";
import type { Tenant, TestServer } from "./server.ts";

/** A REST client bound to one server and key (see rest). */
export type Api = ReturnType<typeof rest>;

/** A new workspace on `server` with a key holding `scopes` (default: all), and a REST client for that key. */
export async function newWorkspace(server: TestServer, scopes?: string[]) {
  const own = await server.tenant(scopes ? { scopes } : {});
  return { own, client: rest(server.api, own.key) };
}

/** Registers a beforeAll making the suite's workspace; returns its `tenant` and an `api` client, for use in tests and later hooks. */
export function useWorkspace(server: () => TestServer): { tenant: Tenant; api: Api } {
  let made: { own: Tenant; client: Api } | undefined;
  beforeAll(async () => {
    made = await newWorkspace(server());
  });
  const current = () => {
    if (!made) throw new Error("the suite's workspace is made in beforeAll");
    return made;
  };
  return {
    tenant: {
      get workspaceId() {
        return current().own.workspaceId;
      },
      get key() {
        return current().own.key;
      },
      get keyId() {
        return current().own.keyId;
      },
    },
    api: {
      get: (path, headers) => current().client.get(path, headers),
      post: (path, body) => current().client.post(path, body),
      patch: (path, body) => current().client.patch(path, body),
      delete: (path) => current().client.delete(path),
    },
  };
}

/** A suite's `scratch()`: a fresh workspace, a client for it, and `count`, how many rows `listPath` lists (up to 100). */
export function listScratch(server: () => TestServer, listPath: string) {
  return async function scratch() {
    const { own, client } = await newWorkspace(server());
    const count = async () => {
      const res = await client.get(`${listPath}?limit=100`);
      expect(res.status).toBe(200);
      return res.body.data.length as number;
    };
    return { own, client, count };
  };
}
