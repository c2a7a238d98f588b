import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { CLIENTS, connect } from "./support.ts";

/** The MCP server's resources (docs/api/mcp.md): the deployment's own documents, as its routes serve them. */

const SDL = readFileSync(new URL("../../../schema/schema.graphql", import.meta.url), "utf8");

e2e("mcp: resources", (server) => {
  const { tenant } = useWorkspace(server);

  for (const kind of CLIENTS) {
    describe(`with the ${kind} client`, () => {
      it("lists the OpenAPI document, the GraphQL SDL and the agents' guide, and reads each as served", async () => {
        const client = await connect(kind, `${server().url}/mcp`, tenant.key);
        try {
          const { resources } = await client.listResources();
          expect(resources.map((resource) => [resource.uri, resource.mimeType])).toEqual([
            ["kontor://openapi.json", "application/json"],
            ["kontor://schema.graphql", "application/graphql"],
            ["kontor://auth.md", "text/markdown"],
          ]);
          for (const resource of resources) expect(resource.description.length).toBeGreaterThan(20);

          const read = async (uri: string) => {
            const { contents } = await client.readResource({ uri });
            expect(contents).toHaveLength(1);
            expect(contents[0].uri).toBe(uri);
            return contents[0].text as string;
          };
          const openApi = await raw(`${server().api}/openapi.json`);
          expect(JSON.parse(await read("kontor://openapi.json"))).toEqual(openApi.json);
          expect(await read("kontor://schema.graphql")).toBe(SDL);
          expect(await read("kontor://auth.md")).toBe((await raw(`${server().url}/auth.md`)).text);

          await expect(client.readResource({ uri: "kontor://secrets.txt" })).rejects.toThrow(
            /kontor:\/\/secrets\.txt/,
          );
        } finally {
          await client.close();
        }
      });
    });
  }
});
