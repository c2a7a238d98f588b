import { expect, it } from "vitest";
import { DEFAULT_TEXT_LENGTH } from "../../../schema/lib/limits.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { graphql } from "../../support/graphql.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Text arrives as sent or not at all (docs/api/limits.md): what each stack stores (valid UTF-8 exactly
 * as sent; lengths counted in characters, so an emoji counts once), and the dashboard's fields through
 * its client. The refusals of malformed bytes, other charsets and lone surrogates that no stack or
 * socket changes run in-process: test/plugins/text-input.test.ts.
 */

/** Text and raw bytes, as one body. */
const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(
    Buffer.concat(
      parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : Buffer.from(part))),
    ),
  );

/** A text with what a careless decoder or counter gets wrong: accents, combining marks, astral characters. */
const FAITHFUL = "Zoë Ünïcødé e\u0301 😀 日本語 𝄞 \u{10FFFD}";

e2e(
  "text input",
  (server, stack) => {
    const post = (
      path: string,
      body: Uint8Array<ArrayBuffer> | string,
      headers: Record<string, string> = {},
      key?: string,
    ) =>
      raw(`${server().url}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(key && { authorization: `Bearer ${key}` }),
          ...headers,
        },
        body,
      });
    it(`stores valid UTF-8 exactly as sent, with or without charset=utf-8 [${stack}]`, async () => {
      const { key } = await server().tenant();
      for (const contentType of [
        "application/json",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        'application/json; charset="Utf-8"',
        "application/json; charset=utf8",
      ]) {
        const created = await post(
          "/v1/leads",
          bytes(JSON.stringify({ first_name: FAITHFUL, notes: FAITHFUL })),
          { "content-type": contentType },
          key,
        );
        expect(created.status, `${contentType}: ${created.text}`).toBe(201);
        const read = await raw(`${server().api}/leads/${created.json.id}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect([read.json.first_name, read.json.notes]).toEqual([FAITHFUL, FAITHFUL]);
      }
      const gql = await graphql(server().url, key)<{ createLead: { id: string; first_name: string } }>(
        "mutation($n: String!) { createLead(first_name: $n) { id first_name } }",
        { n: FAITHFUL },
      );
      expect(gql.data.createLead.first_name).toBe(FAITHFUL);
    });

    it("refuses a lone surrogate in the agent endpoints' and the dashboard's fields, naming the field", async () => {
      for (const body of [
        '{"type":"anonymous","agent_name":"a\\ud800"}',
        '{"type":"service_auth","login_hint":"a@example.com","agent_name":"\\udfff"}',
      ]) {
        const answer = await post("/agent/identity", body);
        expect([answer.status, answer.json.error, answer.json.param], body).toEqual([
          400,
          "invalid_request",
          "agent_name",
        ]);
      }
      const nested = await post("/agent/identity", '{"type":"anonymous","extra":{"list":["ok","\\ud800"]}}');
      expect([nested.status, nested.json.param]).toEqual([400, "extra.list[1]"]);
      const claim = await post(
        "/agent/identity/claim",
        '{"type":"login_hint","claim_token":"clm_\\ud800","login_hint":"a@example.com"}',
      );
      expect([claim.status, claim.json.param]).toEqual([400, "claim_token"]);

      const visitor = new DashboardClient(server().url);
      await visitor.session();
      for (const [body, param] of [
        [{ email: "surrogate@example.com", password: `${PASSWORD}\ud800` }, "password"],
        [
          { email: "surrogate@example.com", password: PASSWORD, workspace_name: "Acme \udc00" },
          "workspace_name",
        ],
      ] as const) {
        const answer = await visitor.api("POST", "/sign-up", body);
        expect([answer.status, answer.json.error.code, answer.json.error.param]).toEqual([
          400,
          "validation_failed",
          param,
        ]);
      }
      const signIn = await visitor.api("POST", "/sign-in", {
        email: "surrogate@example.com",
        password: `\ud800${PASSWORD}`,
      });
      expect([signIn.status, signIn.json.error.param]).toEqual([400, "password"]);
      expect(await server().running.db.prisma.user.count({ where: { email: "surrogate@example.com" } })).toBe(
        0,
      );
    });

    it(`counts characters, not UTF-16 units: an emoji counts once everywhere [${stack}]`, async () => {
      const { key } = await server().tenant();
      const emoji = (n: number) => "😀".repeat(n);
      const atLimit = await post(
        "/v1/leads",
        JSON.stringify({ first_name: emoji(DEFAULT_TEXT_LENGTH) }),
        {},
        key,
      );
      expect(atLimit.status, atLimit.text).toBe(201);
      expect(atLimit.json.first_name).toBe(emoji(DEFAULT_TEXT_LENGTH));
      const over = await post(
        "/v1/leads",
        JSON.stringify({ first_name: emoji(DEFAULT_TEXT_LENGTH + 1) }),
        {},
        key,
      );
      expect([over.status, over.json.error.param]).toEqual([400, "first_name"]);

      const agent = await post(
        "/agent/identity",
        JSON.stringify({ type: "anonymous", agent_name: `${emoji(99)}é` }),
      );
      expect(agent.status, agent.text).toBe(200);
      const row = await server().running.db.prisma.agentRegistration.findUniqueOrThrow({
        where: { id: agent.json.registration_id },
      });
      expect(row.agentName).toBe(`${emoji(99)}é`);
      const long = await post(
        "/agent/identity",
        JSON.stringify({ type: "service_auth", login_hint: "a@example.com", agent_name: emoji(101) }),
      );
      expect([long.status, long.json.error, long.json.param]).toEqual([400, "invalid_request", "agent_name"]);
      expect(long.json.error_description).toContain("at most 100 characters");

      const visitor = new DashboardClient(server().url);
      await visitor.session();
      const signedUp = await visitor.signUp({
        email: `${"😀".repeat(200)}-${Date.now()}@example.com`,
        password: "🔑".repeat(12),
        workspace_name: emoji(100),
      });
      expect(signedUp.status, signedUp.text).toBe(201);
      expect(signedUp.json.workspaces[0].name).toBe(emoji(100));
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "100" },
);
