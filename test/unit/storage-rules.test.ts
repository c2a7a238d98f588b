import { describe, expect, it } from "vitest";
import { ApiError } from "../../schema/lib/errors.ts";
import { bytesLabel, fileName, normalMimeType, storeKey, strictBase64 } from "../../schema/lib/storage.ts";
import { contentDisposition, noneMatch, parseRange, rangeStillValid } from "../../server/storage/content.ts";

const paramOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).param;
  }
  throw new Error("did not throw");
};

describe("strictBase64", () => {
  it("decodes canonical padded base64, the empty string included", () => {
    expect([...strictBase64("c", "AP8A/w==")]).toEqual([0, 255, 0, 255]);
    expect(strictBase64("c", "").length).toBe(0);
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(strictBase64("c", all.toString("base64")).equals(all)).toBe(true);
  });

  it.each(["aGVsbG8", "aGVs bG8=", "aGVs\nbG8=", "-_8=", "QR==", "a===", "=", "aGVsbG8=="])(
    "refuses %j",
    (text) => {
      expect(paramOf(() => strictBase64("content_base64", text))).toBe("content_base64");
    },
  );
});

describe("MIME types", () => {
  it("keeps parameters and lower-cases type and subtype", () => {
    expect(normalMimeType("Text/Plain;charset=UTF-8")).toBe("text/plain; charset=UTF-8");
    expect(normalMimeType("application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toBe(
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    );
    expect(normalMimeType('multipart/form-data; boundary="a b"')).toBe('multipart/form-data; boundary="a b"');
  });

  it.each([
    "",
    "text",
    "text/",
    "/plain",
    "a/b/c",
    "text/plain;",
    "text/plain; charset",
    "te xt/plain",
    `text/${"a".repeat(300)}`,
  ])("refuses %j", (text) => {
    expect(normalMimeType(text)).toBeNull();
  });
});

describe("file names", () => {
  it("trims and keeps any other character", () => {
    expect(fileName("file_name", "  résumé 2026.pdf ")).toBe("résumé 2026.pdf");
  });

  it.each(["", "   ", "a/b", "a\\b", "x".repeat(256), "nul\u0000"])("refuses %j", (text) => {
    expect(paramOf(() => fileName("file_name", text))).toBe("file_name");
  });
});

describe("labels and keys", () => {
  it("labels quotas in decimal units", () => {
    expect([1e9, 1e10, 1e11, 1e12, 10_000, 1_500_000, 999].map(bytesLabel)).toEqual([
      "1 GB",
      "10 GB",
      "100 GB",
      "1 TB",
      "10 kB",
      "1.5 MB",
      "999 bytes",
    ]);
  });

  it("makes keys from ids only, in lower case", () => {
    expect(storeKey("ws_01ABC", "obj_01DEF")).toBe("ws_01abc/obj_01def");
  });
});

describe("Range", () => {
  it("resolves one range against the size", () => {
    expect(parseRange("bytes=0-9", 100)).toEqual({ start: 0, end: 9 });
    expect(parseRange("bytes=90-", 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange("bytes=-10", 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange("bytes=-1000", 100)).toEqual({ start: 0, end: 99 });
    expect(parseRange("bytes=50-1000", 100)).toEqual({ start: 50, end: 99 });
  });

  it("is unsatisfiable past the end, for an empty suffix, and on an empty object", () => {
    expect(parseRange("bytes=100-", 100)).toBe("unsatisfiable");
    expect(parseRange("bytes=-0", 100)).toBe("unsatisfiable");
    expect(parseRange("bytes=0-0", 0)).toBe("unsatisfiable");
  });

  it("serves the whole object for no, several or malformed ranges", () => {
    for (const header of [null, "bytes=0-1,5-6", "bytes=9-2", "items=0-1", "bytes=-", "bytes=a-b"])
      expect(parseRange(header, 100)).toBeNull();
  });

  it("compares entity tags weakly for If-None-Match and strongly for If-Range", () => {
    const etag = '"abc"';
    expect(noneMatch('"x", W/"abc"', etag)).toBe(true);
    expect(noneMatch("*", etag)).toBe(true);
    expect(noneMatch('"x"', etag)).toBe(false);
    expect(rangeStillValid('"abc"', etag, new Date())).toBe(true);
    expect(rangeStillValid('W/"abc"', etag, new Date())).toBe(false);
    const uploaded = new Date("2026-11-23T10:00:00Z");
    expect(rangeStillValid(uploaded.toUTCString(), etag, uploaded)).toBe(true);
    expect(rangeStillValid(new Date("2026-11-22T10:00:00Z").toUTCString(), etag, uploaded)).toBe(false);
  });
});

describe("Content-Disposition", () => {
  it("gives an ASCII fallback and the exact name", () => {
    expect(contentDisposition("résumé 2026.pdf")).toBe(
      `attachment; filename="r_sum_ 2026.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.pdf`,
    );
    expect(contentDisposition('a"b\\c%.txt')).toBe(
      `attachment; filename="a_b_c_.txt"; filename*=UTF-8''a%22b%5Cc%25.txt`,
    );
    expect(contentDisposition("it's (1).txt")).toBe(
      `attachment; filename="it's (1).txt"; filename*=UTF-8''it%27s%20%281%29.txt`,
    );
  });
});
