import { expect } from "vitest";

/** An answer of the claim page: its status, its HTML and its visible text (tags dropped). */
export interface PageAnswer {
  status: number;
  html: string;
  text: string;
  headers: Headers;
}

/**
 * A browser-less visitor of the claim page (`/agent/claim`): keeps its cookies, reads the CSRF field
 * out of each page, and posts the page's forms as a browser would (same-origin `Origin`).
 */
export class ClaimVisitor {
  readonly cookies = new Map<string, string>();
  csrf = "";

  constructor(private readonly base: string) {}

  private async answer(response: Response): Promise<PageAnswer> {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair!.indexOf("=");
      if (attributes.some((a) => a.trim().toLowerCase() === "max-age=0"))
        this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const html = await response.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? this.csrf;
    return {
      status: response.status,
      html,
      text: html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " "),
      headers: response.headers,
    };
  }

  private get cookieHeader() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  async get(url: string): Promise<PageAnswer> {
    return this.answer(await fetch(url, { headers: { cookie: this.cookieHeader }, redirect: "manual" }));
  }

  async post(fields: Record<string, string>): Promise<PageAnswer> {
    const response = await fetch(`${this.base}/agent/claim`, {
      method: "POST",
      headers: {
        cookie: this.cookieHeader,
        origin: this.base,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
    return this.answer(response);
  }

  /** Opens the claim link, signs in through its form, and opens the link again signed in. */
  async signIn(verificationUri: string, email: string, password: string): Promise<PageAnswer> {
    expect((await this.get(verificationUri)).status).toBe(200);
    const attemptToken = new URL(verificationUri).searchParams.get("claim_attempt_token")!;
    const signedIn = await this.post({
      action: "sign_in",
      claim_attempt_token: attemptToken,
      csrf_token: this.csrf,
      email,
      password,
    });
    expect(signedIn.status, signedIn.text).toBe(303);
    return this.get(verificationUri);
  }

  /** Submits the decision form of the claim `verificationUri` leads to. */
  decide(
    verificationUri: string,
    action: "approve" | "deny",
    fields: Record<string, string> = {},
  ): Promise<PageAnswer> {
    const attemptToken = new URL(verificationUri).searchParams.get("claim_attempt_token")!;
    return this.post({ action, claim_attempt_token: attemptToken, csrf_token: this.csrf, ...fields });
  }
}
