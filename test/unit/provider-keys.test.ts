import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FAILED_FETCH_MS, KID_REFETCH_MS, ProviderKeys } from "../../server/agents/provider-keys.ts";

/**
 * The provider key-set cache on its own, with a clock the test moves: a key set that fails to
 * load is fetched again only after a minute, an unknown kid makes at most one refetch a minute,
 * and a removed entry's set is dropped. A JWKS server on 127.0.0.1 counts what it is asked.
 */

interface Key {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(): Promise<Key> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = `k-${randomUUID()}`;
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

const sign = (key: Key, kid = key.kid) =>
  new SignJWT({ sub: "someone" })
    .setProtectedHeader({ alg: "ES256", kid })
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(key.privateKey);

let server: Server;
let jwksUrl: string;
let published: Key[] = [];
let status = 200;
let requests = 0;

beforeAll(async () => {
  server = createServer((_request, response) => {
    requests++;
    if (status !== 200) return void response.writeHead(status).end();
    response
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ keys: published.map((k) => k.jwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("ProviderKeys", () => {
  let now: number;
  let keys: ProviderKeys;
  let key: Key;
  const verify = (jwt: string) => jwtVerify(jwt, keys.resolver(jwksUrl));

  beforeEach(async () => {
    now = 1_000_000;
    keys = new ProviderKeys(false, { now: () => now });
    key = await newKey();
    published = [key];
    status = 200;
    requests = 0;
  });

  it("a key set that fails to load is not fetched again for a minute, then is", async () => {
    status = 500;
    for (let i = 0; i < 5; i++) await expect(verify(await sign(key))).rejects.toThrow(/answered 500/);
    expect(requests).toBe(1);
    status = 200;
    now += FAILED_FETCH_MS - 1;
    await expect(verify(await sign(key))).rejects.toThrow(/answered 500/);
    expect(requests).toBe(1);
    now += 1;
    await expect(verify(await sign(key))).resolves.toMatchObject({ payload: { sub: "someone" } });
    expect(requests).toBe(2);
  });

  it("concurrent verifications against a failing key set share one fetch", async () => {
    status = 500;
    const jwts = await Promise.all(Array.from({ length: 5 }, () => sign(key)));
    const results = await Promise.allSettled(jwts.map(verify));
    expect(results.every((r) => r.status === "rejected")).toBe(true);
    expect(requests).toBe(1);
  });

  it("unknown kids make at most one refetch a minute; a rotated-in key is found by it", async () => {
    await verify(await sign(key));
    expect(requests).toBe(1);
    const rotated = await newKey();
    published = [key, rotated];
    await expect(verify(await sign(rotated))).resolves.toBeTruthy();
    expect(requests).toBe(2);
    // Other unknown kids within the minute are checked against the set as it is: no fetch.
    for (let i = 0; i < 5; i++) await expect(verify(await sign(key, `ghost-${i}`))).rejects.toThrow();
    expect(requests).toBe(2);
    // A key published meanwhile is found by the first unknown kid after the minute.
    const later = await newKey();
    published = [key, rotated, later];
    await expect(verify(await sign(later))).rejects.toThrow();
    expect(requests).toBe(2);
    now += KID_REFETCH_MS;
    await expect(verify(await sign(later))).resolves.toBeTruthy();
    expect(requests).toBe(3);
  });

  it("a failed refetch for an unknown kid keeps the set held, and is not retried for a minute", async () => {
    await verify(await sign(key));
    status = 503;
    await expect(verify(await sign(key, "ghost"))).rejects.toThrow();
    expect(requests).toBe(2);
    // Known kids still verify with the set already held.
    await expect(verify(await sign(key))).resolves.toBeTruthy();
    now += KID_REFETCH_MS - 1;
    await expect(verify(await sign(key, "ghost-2"))).rejects.toThrow();
    expect(requests).toBe(2);
  });

  it("forget() drops a set: the next verification fetches it afresh", async () => {
    await verify(await sign(key));
    await verify(await sign(key));
    expect(requests).toBe(1);
    keys.forget(jwksUrl);
    await verify(await sign(key));
    expect(requests).toBe(2);
  });

  it("forget() also drops a remembered failure", async () => {
    status = 500;
    await expect(verify(await sign(key))).rejects.toThrow();
    status = 200;
    keys.forget(jwksUrl);
    await expect(verify(await sign(key))).resolves.toBeTruthy();
    expect(requests).toBe(2);
  });
});
