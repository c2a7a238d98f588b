import { expect } from "vitest";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { Fixtures, type OpenApiDoc, type Requester } from "./bad-input.ts";

/**
 * What Kontor's routes need beyond their schemas, for the sweeps that drive every route from the
 * OpenAPI document (the bad-input sweep, the limits contract): valid values for fields whose type
 * says too little, and rows for collections nothing creates over /v1. Every path's ids and every
 * body's references are resolved before it returns. `label` tells the two sweeps' rows apart.
 */
export async function sweepFixtures(input: {
  doc: OpenApiDoc;
  request: Requester;
  prisma: PrismaClient;
  workspaceId: string;
  receiverUrl: string;
  label: string;
}): Promise<Fixtures> {
  const { request, label } = input;
  const fixtures = new Fixtures(input.doc, request, {
    values: {
      url: input.receiverUrl,
      events: ["task.completed"],
      name: () => `${label}-${newId("request").slice(4).toLowerCase()}`,
      issuer: () => `http://127.0.0.1:9/${label}-idp/${newId("request")}`,
      jwks_url: `http://127.0.0.1:9/${label}-idp/jwks.json`,
      content_type: "text/plain",
      content_base64: "aGVsbG8=",
      file_name: `${label}.txt`,
    },
    bodies: { "POST /leads": { first_name: label[0]!.toUpperCase() + label.slice(1) } },
    seed: {
      // An agent registration is made by the agent protocol, not by a /v1 route: one is written directly.
      "agent-registrations": async () => {
        await input.prisma.agentRegistration.create({
          data: {
            id: newId("agentRegistration"),
            workspaceId: input.workspaceId,
            type: "service_auth",
            status: "active",
            scopes: ["leads.read"],
            postClaimScopes: ["leads.read"],
          },
        });
      },
      "webhook-deliveries": async (f) => {
        const res = await request("POST", `/webhook-endpoints/${await f.sharedId("webhook-endpoints")}/test`);
        expect(res.status, JSON.stringify(res.body)).toBe(201);
      },
    },
  });
  for (const endpoint of fixtures.endpoints) {
    await fixtures.concretePath(endpoint);
    if (endpoint.body) await fixtures.resolveReferences(endpoint.body.schema);
  }
  return fixtures;
}
