import { maxTextLength } from "./limits.ts";

/** The URLs of trusted ID-JAG providers: checked where they are saved (schema) and where they are fetched (server). */

/** The API's limit of `issuer` and `jwks_url` (schema/lib/limits.ts), in characters. */
const MAX_URL_LENGTH = maxTextLength("Mutation.createTrustedProvider", "issuer");

export class ProviderUrlError extends Error {}

/** The exact hosts http is accepted for outside production (as the URL parser normalises them). */
const HTTP_HOSTS: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * An issuer or JWKS URL a workspace may trust: https, or http on exactly localhost, 127.0.0.1 or
 * [::1] outside production, without credentials or fragment. Its address is then judged by the
 * one address policy (server/webhooks/address-policy.ts) where it is saved and where it is fetched.
 */
export function providerUrl(raw: string, name: string, production: boolean): URL {
  let url: URL;
  try {
    if (raw.length > MAX_URL_LENGTH && [...raw].length > MAX_URL_LENGTH) throw new Error("too long");
    url = new URL(raw);
  } catch {
    throw new ProviderUrlError(
      `${name} must be an absolute https URL of at most ${MAX_URL_LENGTH} characters.`,
    );
  }
  const loopbackHttp = url.protocol === "http:" && HTTP_HOSTS.has(url.hostname) && !production;
  if (url.protocol !== "https:" && !loopbackHttp) {
    throw new ProviderUrlError(
      production
        ? `${name} must use https.`
        : `${name} must use https (http is accepted only for localhost, 127.0.0.1 or [::1] outside production).`,
    );
  }
  if (url.username !== "" || url.password !== "")
    throw new ProviderUrlError(`${name} must not contain credentials.`);
  if (url.hash !== "") throw new ProviderUrlError(`${name} must not have a fragment.`);
  return url;
}
