/**
 * The agent flow (server/agents/auth.md): an AI agent that knows only Kontor's URL discovers the
 * endpoints from a 401, registers, hands its person a link and a code, polls the token endpoint
 * until the person approves, and then holds short-lived `ktr_agt_…` access tokens that it renews
 * with its identity assertion (RFC 7523) shortly before they expire.
 *
 * Self-contained and fetch-based (Node 20+ and browsers): no Node-only import, no dependency.
 * One concern per file: `protocol.ts` (constants and the server's shapes), `options.ts` (the
 * helper's options, state and tokens), `errors.ts`, `http.ts`, `discovery.ts`,
 * `token-endpoint.ts`, `claim-polling.ts` and `agent-auth.ts` (the `AgentAuth` class).
 */
export * from "./agent-auth.js";
export * from "./discovery.js";
export * from "./errors.js";
export * from "./options.js";
export * from "./protocol.js";
