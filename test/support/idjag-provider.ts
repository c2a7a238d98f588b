import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

interface ProviderKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  published: boolean;
}

export interface SignOptions {
  typ?: string;
  /** Sign with this key (default: the first published one). */
  kid?: string;
  /** Claims to drop from the defaults (e.g. `["iat"]`). */
  omit?: string[];
}

/**
 * A local ID-JAG provider for tests: its own ES256 keys, a JWKS on 127.0.0.1 (counting fetches,
 * and answering `jwksStatus`), and helpers that sign ID-JAGs and Security Event Tokens for a given
 * audience. Its issuer is its own URL unless `start` is given another (a second key set under the
 * same issuer string).
 */
export class IdJagProvider {
  readonly keys: ProviderKey[] = [];
  jwksFetches = 0;
  /** What the JWKS answers: 200 with the published keys, or this status with no body. */
  jwksStatus = 200;
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** Where it listens: `http://127.0.0.1:<port>`. */
    readonly url: string,
    readonly issuer: string,
  ) {}

  get jwksUrl() {
    return `${this.url}/jwks.json`;
  }

  static async start(options: { issuer?: string } = {}): Promise<IdJagProvider> {
    let provider: IdJagProvider | undefined;
    const server = createServer((request, response) => {
      if (request.url === "/jwks.json" && provider) {
        provider.jwksFetches++;
        if (provider.jwksStatus !== 200) return void response.writeHead(provider.jwksStatus).end();
        const body = JSON.stringify({
          keys: provider.keys.filter((k) => k.published).map((k) => k.publicJwk),
        });
        response.writeHead(200, { "content-type": "application/json" }).end(body);
      } else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    provider = new IdJagProvider(server, url, options.issuer ?? url);
    await provider.addKey(true);
    return provider;
  }

  /** A new key, published in the JWKS or not; returns its kid. */
  async addKey(published: boolean): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const kid = `k-${randomUUID()}`;
    this.keys.push({
      kid,
      privateKey,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" },
      published,
    });
    return kid;
  }

  publish(kid: string) {
    this.keys.find((k) => k.kid === kid)!.published = true;
  }

  private async sign(claims: JWTPayload, typ: string, options: SignOptions): Promise<string> {
    const key = options.kid
      ? this.keys.find((k) => k.kid === options.kid)!
      : this.keys.find((k) => k.published)!;
    const payload: Record<string, unknown> = { ...claims };
    for (const name of options.omit ?? []) delete payload[name];
    return new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: options.typ ?? typ })
      .sign(key.privateKey);
  }

  /** An ID-JAG for `sub` and `aud`; `claims` override the defaults (verified e-mail, 5 minutes). */
  idJag(
    aud: string,
    sub: string,
    claims: Record<string, unknown> = {},
    options: SignOptions = {},
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return this.sign(
      {
        iss: this.issuer,
        sub,
        aud,
        iat: now,
        exp: now + 300,
        jti: randomUUID(),
        email: `${sub}@example.com`,
        email_verified: true,
        client_id: "test-agent",
        ...claims,
      },
      "oauth-id-jag+jwt",
      options,
    );
  }

  /** A Security Event Token revoking `sub`'s identity assertions. */
  revokedSet(
    aud: string,
    sub: string,
    claims: Record<string, unknown> = {},
    options: SignOptions = {},
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return this.sign(
      {
        iss: this.issuer,
        sub,
        aud,
        iat: now,
        jti: randomUUID(),
        events: { "https://schemas.workos.com/events/agent/auth/identity/assertion/revoked": {} },
        ...claims,
      },
      "secevent+jwt",
      options,
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
