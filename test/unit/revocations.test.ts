import { afterEach, describe, expect, it, vi } from "vitest";
import { CredentialCache } from "../../server/auth/credential-cache.ts";
import { RevocationBus, tag } from "../../server/auth/revocations.ts";

const localBus = () => RevocationBus.open(undefined, "kontor:{test}:", { shared: false });

/** A loader that counts its calls and answers `value` tagged with key_1. */
function loader(value = "credential") {
  const calls = { count: 0 };
  const load = async () => {
    calls.count++;
    return { value, tags: [tag("api_key", "key_1"), tag("workspace", "ws_1")] };
  };
  return { calls, load };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("CredentialCache", () => {
  it("serves a lookup from the cache until a revocation names one of its tags", async () => {
    const bus = await localBus();
    const cache = new CredentialCache<string>(bus, 60_000);
    const { calls, load } = loader();
    await cache.get("h", load);
    await cache.get("h", load);
    expect(calls.count).toBe(1);
    await bus.revoked("api_key", ["key_2"]);
    await cache.get("h", load);
    expect(calls.count).toBe(1);
    await bus.revoked("workspace", ["ws_1"]);
    await cache.get("h", load);
    expect(calls.count).toBe(2);
  });

  it("does not keep a lookup that raced a revocation (read before the commit, finished after the bus spoke)", async () => {
    const bus = await localBus();
    const cache = new CredentialCache<string>(bus, 60_000);
    let release!: () => void;
    const slow = cache.get("h", async () => {
      await new Promise<void>((resolve) => (release = resolve));
      return { value: "stale", tags: [tag("api_key", "key_1")] };
    });
    await bus.revoked("api_key", ["key_1"]);
    release();
    expect(await slow).toBe("stale");
    const { calls, load } = loader("fresh");
    expect(await cache.get("h", load)).toBe("fresh");
    expect(calls.count).toBe(1);
  });

  it("keeps an entry no longer than its TTL, the bound when a revocation cannot be heard", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const bus = await localBus();
    const cache = new CredentialCache<string>(bus, 4_000);
    const { calls, load } = loader();
    await cache.get("h", load);
    vi.setSystemTime(Date.now() + 3_999);
    await cache.get("h", load);
    expect(calls.count).toBe(1);
    vi.setSystemTime(Date.now() + 1);
    await cache.get("h", load);
    expect(calls.count).toBe(2);
  });

  it("caches nothing where processes cannot hear each other (PostgreSQL without Redis)", async () => {
    const bus = await RevocationBus.open(undefined, "kontor:{test}:", { shared: true });
    expect(bus.listening).toBe(false);
    const cache = new CredentialCache<string>(bus, 60_000);
    const { calls, load } = loader();
    await cache.get("h", load);
    await cache.get("h", load);
    expect(calls.count).toBe(2);
  });
});
