import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { ProviderUrlError, providerUrl } from "../../schema/lib/provider-url.ts";
import { classifyAddress, REFUSED_EVERYWHERE } from "../../server/webhooks/address-policy.ts";
import {
  AddressNotAllowedError,
  blockedKind,
  checkWebhookTarget,
  guardedLookup,
  isBlockedAddress,
  type LookupAll,
  parseWebhookUrl,
  refusedKind,
  UrlNotAllowedError,
} from "../../server/webhooks/url-policy.ts";

const PROD = { production: true };
const DEV = { production: false };

function answers(...addresses: string[]): LookupAll {
  return async () => addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
}

async function refusal(promise: Promise<unknown>): Promise<UrlNotAllowedError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, "expected a UrlNotAllowedError").toBeInstanceOf(UrlNotAllowedError);
  return error as UrlNotAllowedError;
}

function syncRefusal(fn: () => unknown): UrlNotAllowedError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, "expected a UrlNotAllowedError").toBeInstanceOf(UrlNotAllowedError);
  return thrown as UrlNotAllowedError;
}

describe("isBlockedAddress", () => {
  const blocked: [string, string][] = [
    ["0.0.0.0", "unspecified"],
    ["0.255.255.255", "unspecified"],
    ["10.0.0.5", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.1", "shared (carrier-grade NAT)"],
    ["100.127.255.255", "shared (carrier-grade NAT)"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "documentation"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["fc00::1", "private"],
    ["fd00:ec2::254", "cloud metadata"],
    ["fd00:ec2::253", "private"],
    ["fd20:ce::254", "cloud metadata"],
    ["100.100.100.200", "cloud metadata"],
    ["168.63.129.16", "cloud metadata"],
    ["192.0.0.192", "cloud metadata"],
    ["::ffff:100.100.100.200", "cloud metadata"],
    ["64:ff9b::6464:64c8", "cloud metadata"],
    ["FD12:3456::1", "private"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["::10.0.0.1", "private"],
    ["::ffff:0:10.0.0.1", "private"],
    ["64:ff9b::10.0.0.1", "private"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["64:ff9b:1::1", "unspecified"], // local-use NAT64 around 0.0.0.1
    ["64:ff9b:1::808:808", "private"], // local-use NAT64 reaches only the operator's network
    ["2002:7f00:1::1", "loopback"],
  ];
  it.each(blocked)("blocks %s (%s)", (ip, kind) => {
    expect(isBlockedAddress(ip)).toBe(true);
    expect(blockedKind(ip)).toBe(kind);
  });

  const allowed = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",
    "168.63.129.17",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.255",
    "192.169.0.1",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001::1",
    "fec0::1",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
  ];
  it.each(allowed)("allows %s", (ip) => {
    expect(isBlockedAddress(ip)).toBe(false);
    expect(blockedKind(ip)).toBeNull();
  });

  it.each([
    "",
    "localhost",
    "example.com",
    "1.2.3",
    "256.1.1.1",
    "127.1",
    "[::1]",
    "::1::2",
    "fe80::1%eth0",
    " 8.8.8.8",
  ])("blocks unparseable input %j", (input) => {
    expect(isBlockedAddress(input)).toBe(true);
    expect(blockedKind(input)).toBe("unparseable");
  });
});

describe("refusedKind", () => {
  it("refuses link-local, metadata and uncheckable addresses everywhere, the rest only in production", () => {
    for (const ip of [
      "169.254.169.254",
      "fe80::1",
      "fd00:ec2::254",
      "100.100.100.200",
      "::ffff:169.254.169.254",
      "fe80::1%eth0",
    ]) {
      expect(refusedKind(ip, false), ip).not.toBeNull();
      expect(refusedKind(ip, true), ip).toBe(refusedKind(ip, false));
    }
    for (const ip of ["127.0.0.1", "::1", "10.0.0.5", "192.168.1.1", "fd00::1", "100.64.0.1", "0.0.0.0"]) {
      expect(refusedKind(ip, false), ip).toBeNull();
      expect(refusedKind(ip, true), ip).toBe(blockedKind(ip));
    }
    expect(refusedKind("8.8.8.8", true)).toBeNull();
  });
});

describe("parseWebhookUrl", () => {
  it("accepts https everywhere and http in development", () => {
    expect(parseWebhookUrl("https://hooks.example.com/in?x=1", PROD).href).toBe(
      "https://hooks.example.com/in?x=1",
    );
    expect(parseWebhookUrl("https://hooks.example.com/in", DEV).hostname).toBe("hooks.example.com");
    expect(parseWebhookUrl("http://localhost:3000/hook", DEV).port).toBe("3000");
  });

  it("refuses http in production", () => {
    const error = syncRefusal(() => parseWebhookUrl("http://hooks.example.com/", PROD));
    expect(error.reason).toBe("https_required");
    expect(error.message).toBe("url must use https in production.");
  });

  it.each([
    "ftp://example.com/file",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/plain,hi",
    "ws://example.com/",
  ])("refuses %s in every environment", (raw) => {
    for (const options of [DEV, PROD]) {
      const error = syncRefusal(() => parseWebhookUrl(raw, options));
      expect(error.reason).toBe("protocol");
      expect(error.message).toBe("url must be an absolute http or https URL.");
    }
  });

  it.each(["/hooks", "hooks.example.com/in", "", "https://", "http://exa mple.com/"])(
    "refuses %j as not an absolute URL",
    (raw) => {
      const error = syncRefusal(() => parseWebhookUrl(raw, DEV));
      expect(error.reason).toBe("invalid");
      expect(error.message).toBe("url must be an absolute http or https URL.");
    },
  );

  it.each([
    "https://user:secret@hooks.example.com/",
    "https://user@hooks.example.com/",
    "https://:secret@hooks.example.com/",
  ])("refuses credentials in %s", (raw) => {
    const error = syncRefusal(() => parseWebhookUrl(raw, DEV));
    expect(error.reason).toBe("credentials");
    expect(error.message).toBe("url must not contain credentials.");
  });

  it("accepts 2048 characters and refuses 2049", () => {
    const base = "https://hooks.example.com/";
    expect(parseWebhookUrl(base + "a".repeat(2048 - base.length), PROD).href).toHaveLength(2048);
    const error = syncRefusal(() => parseWebhookUrl(base + "a".repeat(2049 - base.length), PROD));
    expect(error.reason).toBe("too_long");
  });

  it("measures the normalised URL too", () => {
    const base = "https://hooks.example.com/";
    // 1000 spaces become 3000 characters of %20
    const error = syncRefusal(() => parseWebhookUrl(`${base + " ".repeat(1000)}x`, PROD));
    expect(error.reason).toBe("too_long");
  });
});

describe("checkWebhookTarget", () => {
  const never: LookupAll = async () => {
    throw new Error("lookup must not be called");
  };

  it("accepts loopback and private targets in development", async () => {
    for (const raw of [
      "http://127.0.0.1:8080/",
      "http://[::1]/",
      "http://10.0.0.5/",
      "http://192.168.1.1/",
      "http://[fd00::1]/",
      "http://100.64.0.1/",
    ]) {
      await expect(
        checkWebhookTarget(new URL(raw), { production: false, lookup: never }),
        raw,
      ).resolves.toBeUndefined();
    }
    await expect(
      checkWebhookTarget(new URL("http://localhost/"), { production: false, lookup: never }),
    ).resolves.toBeUndefined();
    await expect(
      checkWebhookTarget(new URL("http://db.internal/"), { production: false, lookup: answers("10.1.2.3") }),
    ).resolves.toBeUndefined();
    const error = await refusal(checkWebhookTarget(new URL("ftp://example.com/"), DEV));
    expect(error.reason).toBe("protocol");
  });

  it("refuses link-local and cloud metadata addresses in every environment", async () => {
    const cases: [string, string][] = [
      [
        "http://169.254.169.254/latest/meta-data/",
        "url points to 169.254.169.254, a link-local address, which is never allowed.",
      ],
      ["http://169.254.0.1/", "url points to 169.254.0.1, a link-local address, which is never allowed."],
      ["http://[fe80::1]/", "url points to fe80::1, a link-local address, which is never allowed."],
      [
        "http://[fd00:ec2::254]/",
        "url points to fd00:ec2::254, a cloud metadata address, which is never allowed.",
      ],
      [
        "http://100.100.100.200/latest/meta-data/",
        "url points to 100.100.100.200, a cloud metadata address, which is never allowed.",
      ],
      [
        "http://[::ffff:169.254.169.254]/",
        "url points to ::ffff:a9fe:a9fe (169.254.169.254 in IPv4-mapped form), a link-local address, which is never allowed.",
      ],
      [
        "http://[64:ff9b:1::a9fe:a9fe]/",
        "url points to 64:ff9b:1::a9fe:a9fe (169.254.169.254 in NAT64 local-use form), a link-local address, which is never allowed.",
      ],
      ["http://2852039166/", "url points to 169.254.169.254, a link-local address, which is never allowed."], // one decimal number
    ];
    for (const production of [false, true]) {
      for (const [raw, message] of cases) {
        const url = new URL(production ? raw.replace("http:", "https:") : raw);
        const error = await refusal(checkWebhookTarget(url, { production, lookup: never }));
        expect(error.reason).toBe("blocked_address");
        expect(error.message).toBe(message);
      }
    }
  });

  it("refuses a name that resolves to a metadata address in development, and takes one that does not resolve yet", async () => {
    const url = new URL("http://metadata.google.internal/computeMetadata/v1/");
    const error = await refusal(
      checkWebhookTarget(url, { production: false, lookup: answers("10.0.0.7", "169.254.169.254") }),
    );
    expect(error).toMatchObject({
      reason: "blocked_address",
      message: "url resolves to 169.254.169.254, a link-local address, which is never allowed.",
    });
    const alibaba = await refusal(
      checkWebhookTarget(new URL("http://meta.example/"), {
        production: false,
        lookup: answers("100.100.100.200"),
      }),
    );
    expect(alibaba.message).toBe(
      "url resolves to 100.100.100.200, a cloud metadata address, which is never allowed.",
    );
    const failing: LookupAll = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND later.example"), { code: "ENOTFOUND" });
    };
    await expect(
      checkWebhookTarget(new URL("http://later.example/"), { production: false, lookup: failing }),
    ).resolves.toBeUndefined();
    await expect(
      checkWebhookTarget(new URL("http://later.example/"), { production: false, lookup: answers() }),
    ).resolves.toBeUndefined();
  });

  it("refuses localhost names in production without resolving them", async () => {
    for (const host of ["localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.localhost"]) {
      const error = await refusal(
        checkWebhookTarget(new URL(`https://${host}/hook`), { production: true, lookup: never }),
      );
      expect(error.reason).toBe("localhost");
      expect(error.message).toContain("localhost");
    }
  });

  it("judges IP literals as they are, without a lookup", async () => {
    const cases: [string, string | null][] = [
      ["https://127.0.0.1/", "url points to 127.0.0.1, a loopback address, which production refuses."],
      ["https://[::1]/", "url points to ::1, a loopback address, which production refuses."],
      ["https://0x7f000001/", "url points to 127.0.0.1, a loopback address, which production refuses."],
      ["https://[fd00::1]/", "url points to fd00::1, a private address, which production refuses."],
      ["https://8.8.8.8/", null],
      ["https://[2606:4700::1111]/", null],
    ];
    for (const [raw, message] of cases) {
      const check = checkWebhookTarget(new URL(raw), { production: true, lookup: never });
      if (message === null) await expect(check).resolves.toBeUndefined();
      else expect((await refusal(check)).message).toBe(message);
    }
  });

  it("refuses a host when any resolved address is blocked", async () => {
    const url = new URL("https://hooks.example.com/in");
    const error = await refusal(
      checkWebhookTarget(url, { production: true, lookup: answers("93.184.215.14", "10.0.0.5") }),
    );
    expect(error.reason).toBe("blocked_address");
    expect(error.message).toBe("url resolves to 10.0.0.5, a private address, which production refuses.");
    await expect(
      checkWebhookTarget(url, { production: true, lookup: answers("93.184.215.14", "2606:4700::1111") }),
    ).resolves.toBeUndefined();
  });

  it("refuses a host that does not resolve, saying so", async () => {
    const url = new URL("https://nowhere.example/in");
    const failing: LookupAll = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.example"), { code: "ENOTFOUND" });
    };
    for (const lookup of [failing, answers()]) {
      const error = await refusal(checkWebhookTarget(url, { production: true, lookup }));
      expect(error.reason).toBe("unresolvable");
      expect(error.message).toBe("url host nowhere.example could not be resolved.");
    }
  });

  it("refuses http in production before resolving anything", async () => {
    const error = await refusal(
      checkWebhookTarget(new URL("http://hooks.example.com/"), { production: true, lookup: never }),
    );
    expect(error.reason).toBe("https_required");
  });
});

type Outcome = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

function callLookup(
  options: Parameters<typeof guardedLookup>[0],
  hostname: string,
  lookupOptions: { all?: boolean; family?: number },
) {
  return new Promise<Outcome>((resolve) => {
    guardedLookup(options)(hostname, lookupOptions, (error, address, family) =>
      resolve({ error, address, family }),
    );
  });
}

describe("guardedLookup", () => {
  it("answers both the all and the single-address forms node:net uses", async () => {
    const lookup = answers("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c");
    const all = await callLookup({ production: true, lookup }, "example.com", { all: true });
    expect(all.error).toBeNull();
    expect(all.address).toEqual([
      { address: "93.184.215.14", family: 4 },
      { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 },
    ]);
    const one = await callLookup({ production: true, lookup }, "example.com", {});
    expect(one).toEqual({ error: null, address: "93.184.215.14", family: 4 });
    const v6 = await callLookup({ production: true, lookup }, "example.com", { family: 6 });
    expect(v6).toEqual({ error: null, address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 });
  });

  it("refuses a blocked address in production with EADDRNOTALLOWED", async () => {
    for (const all of [true, false]) {
      const { error } = await callLookup(
        { production: true, lookup: answers("93.184.215.14", "169.254.169.254") },
        "meta.example",
        { all },
      );
      expect(error).toBeInstanceOf(AddressNotAllowedError);
      expect(error).toBeInstanceOf(UrlNotAllowedError);
      expect(error?.code).toBe("EADDRNOTALLOWED");
      expect((error as AddressNotAllowedError).address).toBe("169.254.169.254");
      expect(error?.message).toBe(
        "url resolves to 169.254.169.254, a link-local address, which is never allowed.",
      );
    }
  });

  it("refuses localhost names in production without resolving", async () => {
    const lookup: LookupAll = async () => {
      throw new Error("lookup must not be called");
    };
    const { error } = await callLookup({ production: true, lookup }, "localhost", { all: true });
    expect(error?.code).toBe("EADDRNOTALLOWED");
    expect((error as AddressNotAllowedError).reason).toBe("localhost");
  });

  it("passes loopback and private addresses in development", async () => {
    const result = await callLookup({ production: false, lookup: answers("127.0.0.1") }, "localhost", {});
    expect(result).toEqual({ error: null, address: "127.0.0.1", family: 4 });
    const both = await callLookup(
      { production: false, lookup: answers("10.0.0.5", "fd00::5") },
      "lan.example",
      { all: true },
    );
    expect(both).toMatchObject({
      error: null,
      address: [
        { address: "10.0.0.5", family: 4 },
        { address: "fd00::5", family: 6 },
      ],
    });
  });

  it("refuses link-local and metadata addresses in development too", async () => {
    for (const address of [
      "169.254.169.254",
      "fe80::1",
      "fd00:ec2::254",
      "100.100.100.200",
      "fe80::1%eth0",
      "64:ff9b:1::a9fe:a9fe",
      "2002:a9fe:a9fe::1",
    ]) {
      for (const all of [true, false]) {
        const { error } = await callLookup(
          { production: false, lookup: answers("10.0.0.5", address) },
          "rebound.example",
          { all },
        );
        expect(error, address).toBeInstanceOf(AddressNotAllowedError);
        expect(error?.code).toBe("EADDRNOTALLOWED");
        expect((error as AddressNotAllowedError).address).toBe(address);
        expect(error?.message).toMatch(/which is never allowed\.$/);
      }
    }
  });

  it("reports resolution failures as DNS errors", async () => {
    const failing: LookupAll = async () => {
      throw new Error("resolver exploded");
    };
    const thrown = await callLookup({ production: true, lookup: failing }, "nowhere.example", { all: true });
    expect(thrown.error?.code).toBe("ENOTFOUND");
    expect(thrown.error?.message).toContain("resolver exploded");
    const empty = await callLookup({ production: false, lookup: answers() }, "nowhere.example", {});
    expect(empty.error?.code).toBe("ENOTFOUND");
    const wrongFamily = await callLookup(
      { production: false, lookup: answers("93.184.215.14") },
      "v4only.example",
      { family: 6 },
    );
    expect(wrongFamily.error?.code).toBe("ENOTFOUND");
    const coded = await callLookup(
      {
        production: true,
        lookup: async () => {
          throw Object.assign(new Error("getaddrinfo EAI_AGAIN slow.example"), { code: "EAI_AGAIN" });
        },
      },
      "slow.example",
      {},
    );
    expect(coded.error?.code).toBe("EAI_AGAIN");
  });
});

/**
 * Every spelling of an address a URL or a resolver can give, and what the one address policy makes
 * of it: the kind of the address it decodes to (null: public), or "invalid" when the URL parser
 * refuses the spelling itself. Only literals: nothing is resolved and nothing is connected to.
 */
const SPELLINGS: [host: string, kind: string | null][] = [
  // 169.254.169.254, the metadata service of AWS, GCP and Azure, in every IPv4 spelling…
  ["169.254.169.254", "link-local"],
  ["2852039166", "link-local"], // one decimal number
  ["0251.0376.0251.0376", "link-local"], // octal
  ["0xa9.0xfe.0xa9.0xfe", "link-local"], // hex
  ["0xa9fea9fe", "link-local"], // one hex number
  ["0251.0xfe.43518", "link-local"], // mixed, the last part 16 bits
  ["169.16689662", "link-local"], // the last part 24 bits
  ["00000000251.0376.0251.0376", "link-local"], // leading zeros
  ["169.254.169.254.", "link-local"], // trailing dot
  ["%31%36%39.254.169.254", "link-local"], // percent-encoded
  ["１６９.２５４.１６９.２５４", "link-local"], // full-width digits (IDNA)
  // …and in every IPv6 form that carries it.
  ["[::ffff:169.254.169.254]", "link-local"], // IPv4-mapped
  ["[::ffff:a9fe:a9fe]", "link-local"],
  ["[0:0:0:0:0:FFFF:A9FE:A9FE]", "link-local"],
  ["[::a9fe:a9fe]", "link-local"], // IPv4-compatible (deprecated)
  ["[::169.254.169.254]", "link-local"],
  ["[::ffff:0:a9fe:a9fe]", "link-local"], // IPv4-translated (SIIT)
  ["[64:ff9b::a9fe:a9fe]", "link-local"], // NAT64 well-known prefix
  ["[64:ff9b::169.254.169.254]", "link-local"],
  ["[64:ff9b:1::a9fe:a9fe]", "link-local"], // NAT64 local-use prefix (RFC 8215)
  ["[64:ff9b:1:a9fe:a9:fea9:fe00:0]", "link-local"], // the same under a /48 NAT64 prefix (RFC 6052)
  ["[2002:a9fe:a9fe::]", "link-local"], // 6to4
  ["[2002:a9fe:a9fe:1234::1]", "link-local"],
  ["[2001:0:4136:e378:8000:63bf:5601:5601]", "link-local"], // Teredo, client 169.254.169.254 (inverted)
  ["[2001:0:a9fe:a9fe::1]", "link-local"], // Teredo, server 169.254.169.254
  ["[fe80::1]", "link-local"],
  ["[fe80::1%25eth0]", "invalid"], // a zone id: the URL parser refuses it
  // Other cloud metadata services.
  ["100.100.100.200", "cloud metadata"],
  ["1684301000", "cloud metadata"],
  ["[::ffff:6464:64c8]", "cloud metadata"],
  ["[64:ff9b:1::6464:64c8]", "cloud metadata"],
  ["[2002:6464:64c8::]", "cloud metadata"],
  ["[fd00:ec2::254]", "cloud metadata"],
  // Loopback and unspecified: production only.
  ["127.0.0.1", "loopback"],
  ["127.0.0.2", "loopback"],
  ["127.1", "loopback"],
  ["2130706433", "loopback"],
  ["0x7f000001", "loopback"],
  ["017700000001", "loopback"],
  ["[::1]", "loopback"],
  ["[::ffff:127.0.0.1]", "loopback"],
  ["[::ffff:7f00:2]", "loopback"],
  ["[64:ff9b::7f00:1]", "loopback"],
  ["[2002:7f00:1::]", "loopback"],
  ["[2001:0:4136:e378:8000:63bf:80ff:fffe]", "loopback"], // Teredo, client 127.0.0.1
  ["0.0.0.0", "unspecified"],
  ["0", "unspecified"],
  ["[::]", "unspecified"],
  ["[::0.0.0.0]", "unspecified"],
  // Private, shared, multicast, reserved: production only.
  ["10.0.0.1", "private"],
  ["012.0.0.1", "private"],
  ["[::ffff:10.0.0.1]", "private"],
  ["[64:ff9b:1::808:808]", "private"], // local-use NAT64 reaches only the operator's network
  ["[fd00::1]", "private"],
  ["100.64.0.1", "shared (carrier-grade NAT)"],
  ["224.0.0.1", "multicast"],
  ["[ff02::1]", "multicast"],
  ["[::ffff:224.0.0.1]", "multicast"],
  ["255.255.255.255", "reserved"],
  ["[100::1]", "reserved"],
  ["[3fff::1]", "documentation"],
  ["[2001:2::1]", "benchmarking"],
  // Public, in the same forms: allowed everywhere.
  ["8.8.8.8", null],
  ["134744072", null],
  ["[::ffff:8.8.8.8]", null],
  ["[64:ff9b::808:808]", null],
  ["[2002:808:808::1]", null],
  ["[2001:0:4136:e378:8000:63bf:f7f7:f7f7]", null], // Teredo, server 65.54.227.120, client 8.8.8.8
  ["[2606:4700::1111]", null],
];

describe("one address policy, every spelling", () => {
  const never: LookupAll = async () => {
    throw new Error("lookup must not be called");
  };

  it.each(SPELLINGS)("%s is %s", async (host, kind) => {
    for (const production of [false, true]) {
      const raw = `${production ? "https" : "http"}://${host}/hook`;
      if (kind === "invalid") {
        expect(syncRefusal(() => parseWebhookUrl(raw, { production })).reason).toBe("invalid");
        continue;
      }
      const url = parseWebhookUrl(raw, { production });
      const literal = url.hostname.replace(/^\[|\]$/g, "");
      expect(blockedKind(literal), literal).toBe(kind);
      const check = checkWebhookTarget(url, { production, lookup: never });
      const refused = kind !== null && (production || REFUSED_EVERYWHERE.has(kind));
      if (!refused) {
        await expect(check, `${raw} (production: ${production})`).resolves.toBeUndefined();
        continue;
      }
      const error = await refusal(check);
      expect(error.reason).toBe("blocked_address");
      expect(error.message).toContain(`a ${kind} address`);
      expect(error.message).toMatch(
        REFUSED_EVERYWHERE.has(kind) ? /which is never allowed\.$/ : /which production refuses\.$/,
      );
      // A resolver's answer is judged the same way, at admission and at connection.
      const resolved = await refusal(
        checkWebhookTarget(new URL(`${url.protocol}//name.example/`), {
          production,
          lookup: answers(literal),
        }),
      );
      expect(resolved.message).toContain(`a ${kind} address`);
      const connected = await callLookup({ production, lookup: answers(literal) }, "name.example", {
        all: true,
      });
      expect(connected.error?.code).toBe("EADDRNOTALLOWED");
    }
  });

  it("names the IPv4 address an IPv6 form carries", () => {
    expect(classifyAddress("2001:0:4136:e378:8000:63bf:5601:5601")).toEqual({
      kind: "link-local",
      carried: { address: "169.254.169.254", form: "Teredo" },
    });
    expect(classifyAddress("2002:a9fe:a9fe::")).toEqual({
      kind: "link-local",
      carried: { address: "169.254.169.254", form: "6to4" },
    });
    expect(classifyAddress("64:ff9b:1::808:808")).toEqual({ kind: "private" });
    expect(classifyAddress("8.8.8.8")).toBeNull();
  });
});

describe("trusted providers' URLs (providerUrl)", () => {
  const refused = (raw: string, production: boolean) => {
    expect(() => providerUrl(raw, "jwks_url", production), raw).toThrow(ProviderUrlError);
  };

  it("takes https, and http only on exactly localhost, 127.0.0.1 or [::1] outside production", () => {
    for (const raw of [
      "https://idp.example.com/jwks",
      "https://127.0.0.2/jwks",
      "http://localhost:9/jwks",
      "http://127.0.0.1:9/jwks",
      "http://[::1]:9/jwks",
    ]) {
      expect(providerUrl(raw, "jwks_url", false).href, raw).toBe(new URL(raw).href);
    }
    for (const raw of [
      "http://127.0.0.2/",
      "http://127.1.2.3/",
      "http://[::ffff:127.0.0.1]/",
      "http://localhost./",
      "http://a.localhost/",
      "http://10.0.0.1/",
      "http://idp.example.com/",
    ]) {
      refused(raw, false);
    }
    for (const raw of ["http://localhost/", "http://127.0.0.1/", "http://[::1]/"]) refused(raw, true);
    expect(providerUrl("https://idp.example.com/", "issuer", true).hostname).toBe("idp.example.com");
  });

  it("names the field it refuses", () => {
    expect(() => providerUrl("http://127.0.0.2/", "issuer", false)).toThrow(/^issuer must use https/);
  });
});
