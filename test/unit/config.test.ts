import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/runtime/config.ts";

describe("KONTOR_ENV and PUBLIC_URL", () => {
  it("defaults to development on a loopback PUBLIC_URL (or none)", () => {
    expect(loadConfig({}).env).toBe("development");
    for (const url of ["http://localhost:4000", "http://127.0.0.1:8080/", "http://[::1]:4000"]) {
      expect(loadConfig({ PUBLIC_URL: url }).env).toBe("development");
    }
  });

  it("refuses to start on any other PUBLIC_URL until KONTOR_ENV is set, whichever way", () => {
    for (const url of [
      "https://api.example.com",
      "http://127.0.0.2:4000",
      "http://10.0.0.5",
      "http://localhost.example.com",
    ]) {
      expect(() => loadConfig({ PUBLIC_URL: url })).toThrow(ConfigError);
      expect(() => loadConfig({ PUBLIC_URL: url })).toThrow(
        /not a loopback address, so KONTOR_ENV must be set/,
      );
    }
    expect(loadConfig({ PUBLIC_URL: "https://api.example.com", KONTOR_ENV: "production" }).env).toBe(
      "production",
    );
    expect(loadConfig({ PUBLIC_URL: "https://staging.example.com", KONTOR_ENV: "development" }).env).toBe(
      "development",
    );
  });

  it("takes PUBLIC_URL only as an http(s) origin", () => {
    for (const url of [
      "not a url",
      "ftp://example.com",
      "https://example.com/kontor",
      "https://user:pw@example.com",
      "https://example.com/?a=1",
    ]) {
      expect(() => loadConfig({ PUBLIC_URL: url, KONTOR_ENV: "production" }), url).toThrow(
        /PUBLIC_URL must be/,
      );
    }
    expect(loadConfig({ PUBLIC_URL: "https://api.example.com///", KONTOR_ENV: "production" }).publicUrl).toBe(
      "https://api.example.com",
    );
  });
});
