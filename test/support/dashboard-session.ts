import { raw } from "./http.ts";

export const PASSWORD = "correct horse battery staple";

export interface JsonAnswer<T = any> {
  status: number;
  headers: Headers;
  json: T;
  text: string;
}

/**
 * A browser-less dashboard: keeps its cookies, sends the CSRF token the last session answer gave,
 * and talks to the account API, /graphql and /v1 the way the web app does.
 */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  csrf = "";
  /** Sent as Kontor-Workspace when set. */
  workspace: string | undefined;

  constructor(readonly base: string) {}

  remember(response: { headers: Headers }) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const name = pair!.slice(0, pair!.indexOf("="));
      const value = pair!.slice(pair!.indexOf("=") + 1);
      if (attributes.some((a) => a.trim().toLowerCase() === "max-age=0")) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join("; ");
  }

  /** A request to the account API. `csrf: null` sends no token; a string sends that one. */
  async api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    options: { csrf?: string | null; headers?: Record<string, string>; raw?: string } = {},
  ): Promise<JsonAnswer<T>> {
    const headers: Record<string, string> = { cookie: this.cookieHeader(), ...options.headers };
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (csrf !== null && csrf !== "") headers["x-csrf-token"] = csrf;
    let payload: string | undefined = options.raw;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["content-type"] ??= "application/json";
    }
    const response = await fetch(`${this.base}/dashboard/api${path}`, {
      method,
      headers,
      body: payload,
      redirect: "manual",
    });
    this.remember(response);
    const text = await response.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    if (json && typeof json.csrf_token === "string") this.csrf = json.csrf_token;
    return { status: response.status, headers: response.headers, json, text };
  }

  /** Loads the session (as the app does on start), taking its CSRF token. */
  session() {
    return this.api("GET", "/session");
  }

  async signUp(body: Record<string, unknown>) {
    if (!this.csrf) await this.session();
    return this.api("POST", "/sign-up", body);
  }

  async signIn(email: string, password = PASSWORD) {
    if (!this.csrf) await this.session();
    return this.api("POST", "/sign-in", { email, password });
  }

  private sessionHeaders(
    extra: Record<string, string> = {},
    csrf: string | null = this.csrf,
  ): Record<string, string> {
    return {
      cookie: this.cookieHeader(),
      ...(csrf !== null && { "x-csrf-token": csrf }),
      ...(this.workspace && { "kontor-workspace": this.workspace }),
      ...extra,
    };
  }

  /** POST /graphql with the cookie, the CSRF token and Kontor-Workspace. */
  async graphql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    options: { csrf?: string | null; headers?: Record<string, string> } = {},
  ) {
    const response = await fetch(`${this.base}/graphql`, {
      method: "POST",
      headers: this.sessionHeaders(
        { "content-type": "application/json", accept: "application/json", ...options.headers },
        options.csrf === undefined ? this.csrf : options.csrf,
      ),
      body: JSON.stringify({ query, variables }),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      json: JSON.parse(text) as { data?: T; errors?: { message: string; extensions: Record<string, any> }[] },
    };
  }

  /** A /v1 request with the cookie (checked against the OpenAPI document like every /v1 answer in tests). */
  v1(
    method: string,
    path: string,
    body?: unknown,
    options: { csrf?: string | null; headers?: Record<string, string> } = {},
  ) {
    const headers = this.sessionHeaders(
      { ...options.headers, ...(body !== undefined && { "content-type": "application/json" }) },
      options.csrf === undefined ? this.csrf : options.csrf,
    );
    return raw(`${this.base}/v1${path}`, {
      method,
      headers,
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  }
}
