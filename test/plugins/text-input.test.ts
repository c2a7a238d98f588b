import { expect, it } from "vitest";
import { graphql, inProcess, raw } from "../support/in-process.ts";

/**
 * Text arrives as sent or not at all (docs/api/limits.md): bodies are UTF-8 only — malformed bytes are
 * 400 invalid_json and another declared charset 415, on every surface (REST, GraphQL, the agent
 * endpoints, the dashboard's account API) — and a lone surrogate is refused in any text field, naming
 * it. Bodies are raw bytes. In-process: what is stored on each stack, and the dashboard client's
 * checks, are in test/e2e/http/text-input.test.ts.
 */

/** Malformed UTF-8, each of a kind a lenient decoder would turn into U+FFFD. */
const MALFORMED: [string, number[]][] = [
  ["FF FE (bytes no UTF-8 has)", [0xff, 0xfe]],
  ["ED A0 80 (an encoded surrogate)", [0xed, 0xa0, 0x80]],
  ["C0 AF (an overlong '/')", [0xc0, 0xaf]],
  ["E0 80 80 (an overlong NUL)", [0xe0, 0x80, 0x80]],
  ["F4 90 80 80 (past U+10FFFF)", [0xf4, 0x90, 0x80, 0x80]],
  ["80 (a lone continuation byte)", [0x80]],
  ["F0 9F 98 (a truncated emoji)", [0xf0, 0x9f, 0x98]],
];

/** Text and raw bytes, as one body. */
const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(
    Buffer.concat(
      parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : Buffer.from(part))),
    ),
  );

inProcess(
  "text input",
  (server) => {
    const post = (
      path: string,
      body: Uint8Array<ArrayBuffer> | string,
      headers: Record<string, string> = {},
      key?: string,
    ) =>
      raw(
        `${server().url}${path}`,
        {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(key && { authorization: `Bearer ${key}` }),
            ...headers,
          },
          body,
        },
        server().fetch,
      );
    const leadCount = (workspaceId: string) =>
      server().running.db.prisma.lead.count({ where: { workspaceId } });

    it("REST refuses malformed UTF-8 with 400 invalid_json, and stores nothing", async () => {
      const { key, workspaceId } = await server().tenant();
      for (const [label, sequence] of MALFORMED) {
        const answer = await post("/v1/leads", bytes('{"first_name":"Bad', sequence, 'UTF8"}'), {}, key);
        expect(answer.status, `${label}: ${answer.text}`).toBe(400);
        expect(answer.json.error).toMatchObject({
          code: "invalid_json",
          message: expect.stringContaining("UTF-8"),
        });
      }
      // Cut off in the middle of a character at the very end of the body.
      expect(
        (await post("/v1/leads", bytes('{"first_name":"x"}', [0xf0, 0x9f]), {}, key)).json.error.code,
      ).toBe("invalid_json");
      // Bytes of a type no surface reads as text are refused for their type, never decoded.
      for (const type of ["application/octet-stream", "text/plain"]) {
        const binary = await post("/v1/leads", bytes([0xff, 0xfe, 0x00]), { "content-type": type }, key);
        expect([binary.status, binary.json.error.code], type).toEqual([415, "unsupported_media_type"]);
      }
      expect(await leadCount(workspaceId)).toBe(0);
    });

    it("GraphQL, the agent endpoints and the dashboard's account API refuse malformed UTF-8 alike", async () => {
      const { key, workspaceId } = await server().tenant();
      for (const [label, sequence] of MALFORMED) {
        const inline = await post(
          "/graphql",
          bytes('{"query":"mutation { createLead(first_name: \\"Bad', sequence, '\\") { id } }"}'),
          {},
          key,
        );
        expect(inline.status, label).toBe(400);
        expect(inline.json.errors[0].extensions.code, label).toBe("invalid_json");
        const variables = await post(
          "/graphql",
          bytes(
            '{"query":"mutation($n: String!) { createLead(first_name: $n) { id } }","variables":{"n":"',
            sequence,
            '"}}',
          ),
          {},
          key,
        );
        expect(variables.json.errors[0].extensions.code, label).toBe("invalid_json");
        const agent = await post(
          "/agent/identity",
          bytes('{"type":"anonymous","agent_name":"Bad', sequence, '"}'),
        );
        expect([agent.status, agent.json.error], label).toEqual([400, "invalid_json"]);
        const form = await post(
          "/oauth2/token",
          bytes("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=", sequence),
          {
            "content-type": "application/x-www-form-urlencoded",
          },
        );
        expect([form.status, form.json.error], label).toEqual([400, "invalid_json"]);
        const dashboard = await post(
          "/dashboard/api/sign-up",
          bytes('{"email":"bad@example.com","password":"', sequence, 'correct horse battery"}'),
        );
        expect([dashboard.status, dashboard.json.error.code], label).toEqual([400, "invalid_json"]);
      }
      expect(await leadCount(workspaceId)).toBe(0);
      expect(await server().running.db.prisma.user.count({ where: { email: "bad@example.com" } })).toBe(0);
    });

    it("refuses a body declared in another charset with 415 unsupported_media_type, on every surface, and stores nothing", async () => {
      const { key, workspaceId } = await server().tenant();
      const latin1 = bytes('{"first_name":"Zo', [0xeb], '"}');
      for (const charset of ["latin1", "ISO-8859-1", '"iso-8859-1"', "windows-1252", "utf-16", "us-ascii"]) {
        const contentType = `application/json; charset=${charset}`;
        const rest = await post("/v1/leads", latin1, { "content-type": contentType }, key);
        expect(rest.status, `${charset}: ${rest.text}`).toBe(415);
        expect(rest.json.error).toMatchObject({
          code: "unsupported_media_type",
          message: expect.stringContaining("UTF-8 only"),
        });
        // Pure ASCII too: the declaration, not the bytes, is what is refused.
        expect(
          (await post("/v1/leads", bytes('{"first_name":"Zoe"}'), { "content-type": contentType }, key))
            .status,
        ).toBe(415);
        const gql = await post(
          "/graphql",
          bytes('{"query":"mutation { createLead(first_name: \\"Zo', [0xeb], '\\") { id } }"}'),
          { "content-type": contentType },
          key,
        );
        expect([gql.status, gql.json.errors[0].extensions.code]).toEqual([415, "unsupported_media_type"]);
        const agent = await post(
          "/agent/identity",
          bytes('{"type":"anonymous","agent_name":"Zo', [0xeb], '"}'),
          { "content-type": contentType },
        );
        expect([agent.status, agent.json.error]).toEqual([415, "unsupported_media_type"]);
      }
      expect(await leadCount(workspaceId)).toBe(0);
    });

    it("refuses percent-encoded bytes that are not UTF-8 in forms and query strings, naming the parameter", async () => {
      const { key } = await server().tenant();
      const form = await post("/oauth2/token", "grant_type=client%FFcredentials", {
        "content-type": "application/x-www-form-urlencoded",
      });
      expect([form.status, form.json.error, form.json.param]).toEqual([400, "invalid_request", "grant_type"]);
      for (const bad of ["%FF", "%ED%A0%80", "%C0%AF", "%F0%9F%98"]) {
        const search = await raw(
          `${server().api}/leads?search=a${bad}`,
          { headers: { authorization: `Bearer ${key}` } },
          server().fetch,
        );
        expect([search.status, search.json.error.code, search.json.error.param], bad).toEqual([
          400,
          "validation_failed",
          "search",
        ]);
      }
      // A raw upload's file name comes from the query string and is stored: refused, not altered.
      const bucket = await post("/v1/buckets", JSON.stringify({ name: `text-${Date.now()}` }), {}, key);
      const upload = await post(
        `/v1/buckets/${bucket.json.id}/objects?file_name=report%C0%AF.txt`,
        "hello",
        { "content-type": "text/plain" },
        key,
      );
      expect([upload.status, upload.json.error.code, upload.json.error.param]).toEqual([
        400,
        "validation_failed",
        "file_name",
      ]);
      expect(
        await server().running.db.prisma.storedObject.count({ where: { bucketId: bucket.json.id } }),
      ).toBe(0);
      // Escapes that are not escapes stay as they are, as URLSearchParams reads them.
      expect(
        (
          await raw(
            `${server().api}/leads?search=100%25%zz`,
            { headers: { authorization: `Bearer ${key}` } },
            server().fetch,
          )
        ).status,
      ).toBe(200);
    });

    it("refuses a lone surrogate in REST and GraphQL text fields with validation_failed naming the field", async () => {
      const { key, workspaceId } = await server().tenant();
      const api = (path: string, body: string) => post(`/v1${path}`, body, {}, key);
      for (const text of ["a\\ud800", "\\udc00b", "\\udc00\\ud800", "x\\udbff"]) {
        for (const [path, body, param] of [
          ["/leads", `{"first_name":"${text}"}`, "first_name"],
          ["/leads", `{"first_name":"Ok","notes":"${text}"}`, "notes"],
          ["/clients", `{"name":"Ok","address":{"city":"${text}"}}`, "address.city"],
          [
            "/invoices",
            `{"client_id":"cli_01J00000000000000000000000","items":[{"description":"${text}","quantity":1,"unit_price":1}]}`,
            "items[0].description",
          ],
        ]) {
          const answer = await api(path!, body!);
          expect([answer.status, answer.json.error.code, answer.json.error.param], `${path} ${body}`).toEqual(
            [400, "validation_failed", param],
          );
          expect(answer.json.error.message).toContain("lone surrogate");
        }
        const run = graphql(server().url, key, server().fetch);
        const variables = await run("mutation($n: String!) { createLead(first_name: $n) { id } }", {
          n: JSON.parse(`"${text}"`),
        });
        expect(variables.errors?.[0]?.extensions).toMatchObject({
          code: "validation_failed",
          param: "first_name",
        });
        const inline = await run(`mutation { createLead(first_name: "${text}") { id } }`);
        expect(inline.errors?.[0]?.extensions.code).toBe("validation_failed");
      }
      expect(await leadCount(workspaceId)).toBe(0);
      const pair = await api("/leads", '{"first_name":"\\ud83d\\ude00"}');
      expect([pair.status, pair.json.first_name]).toEqual([201, "😀"]);
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "100" },
);
