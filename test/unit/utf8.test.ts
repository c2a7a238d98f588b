import { describe, expect, it } from "vitest";
import { findUnicodeProblem, textProblem } from "../../schema/lib/limits.ts";
import {
  bodyTextProblem,
  declaredCharset,
  decodeUtf8,
  formEntries,
  MalformedFormError,
  queryStringProblem,
} from "../../server/http/utf8.ts";

/** The one UTF-8 reader of request text (server/http/utf8.ts) and the one Unicode rule of text fields (schema/lib/limits.ts). */

const json = "application/json";

describe("request bodies", () => {
  it("decodes UTF-8 as sent, a byte-order mark included, and refuses every malformed sequence", () => {
    expect(decodeUtf8(Buffer.from("\ufeffZoë 😀", "utf8"))).toBe("\ufeffZoë 😀");
    for (const bad of [
      [0xff],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x9f, 0x98],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xc3],
    ]) {
      expect(decodeUtf8(new Uint8Array(bad)), bad.join(" ")).toBeNull();
      expect(bodyTextProblem(json, new Uint8Array([0x22, ...bad, 0x22]))?.code).toBe("invalid_json");
    }
  });

  it("reads the declared charset however it is written, and refuses any but UTF-8", () => {
    expect(declaredCharset("application/json")).toBeNull();
    expect(declaredCharset('application/json;CHARSET="ISO-8859-1"')).toBe("iso-8859-1");
    expect(declaredCharset("application/json; boundary=x; charset=Latin1 ")).toBe("latin1");
    const ascii = Buffer.from('{"a":"b"}');
    for (const ok of [json, `${json}; charset=utf-8`, `${json};charset=UTF-8`, `${json}; charset="utf8"`])
      expect(bodyTextProblem(ok, ascii), ok).toBeNull();
    for (const other of ["latin1", "us-ascii", "utf-16le", '""'])
      expect(bodyTextProblem(`${json}; charset=${other}`, ascii)?.status, other).toBe(415);
  });

  it("leaves empty bodies and types no surface reads as text to their own refusals", () => {
    expect(bodyTextProblem(`${json}; charset=latin1`, new Uint8Array())).toBeNull();
    expect(bodyTextProblem("application/octet-stream", new Uint8Array([0xff]))).toBeNull();
    expect(bodyTextProblem(null, new Uint8Array([0xff]))).toBeNull();
    for (const text of [
      "application/problem+json",
      "application/x-www-form-urlencoded",
      "application/secevent+jwt",
    ]) {
      expect(bodyTextProblem(text, new Uint8Array([0xff]))?.code, text).toBe("invalid_json");
    }
  });
});

describe("forms and query strings", () => {
  it("splits and decodes as URLSearchParams does, for every well-formed input", () => {
    for (const text of [
      "a=1&b=2",
      "a+b=c+d",
      "x=%20%2B%26",
      "e=%E2%82%AC%F0%9F%98%80",
      "a=b=c",
      "&&a&=v&",
      "bad=%zz%4",
      "é=ü",
      "k=100%",
    ]) {
      expect(formEntries(text), text).toEqual([...new URLSearchParams(text)]);
    }
  });

  it("refuses an escape that decodes to something other than UTF-8, naming the field, where URLSearchParams would put U+FFFD", () => {
    for (const [text, param] of [
      ["a=%FF", "a"],
      ["ok=1&token=x%ED%A0%80", "token"],
      ["%C0%AF=1", "%C0%AF"],
      ["t=%F0%9F%98", "t"],
    ]) {
      expect(() => formEntries(text!)).toThrow(MalformedFormError);
      expect(queryStringProblem(`?${text}`)).toMatchObject({ code: "validation_failed", param });
    }
    expect(queryStringProblem("?search=caf%C3%A9")).toBeNull();
  });
});

describe("the Unicode rule of text", () => {
  it("refuses lone surrogates, in either order, and counts astral characters once", () => {
    for (const text of ["a\ud800", "\udc00", "\udc00\ud800", "x\udbffy"])
      expect(textProblem(text, 10), JSON.stringify(text)).toContain("lone surrogate");
    expect(textProblem("😀".repeat(10), 10)).toBeNull();
    expect(textProblem("😀".repeat(11), 10)).toBe("must be at most 10 characters");
  });

  it("finds the first malformed string of a parsed body, keys included, and names where it is", () => {
    expect(findUnicodeProblem({ a: "ok", b: [{ c: "😀" }] })).toBeNull();
    expect(findUnicodeProblem({ a: "ok", b: [1, { c: "x\ud800" }] })).toMatchObject({ param: "b[1].c" });
    expect(findUnicodeProblem({ "k\udc00": 1 })).toMatchObject({
      param: "k\udc00",
      problem: expect.stringContaining("field name"),
    });
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 50_000; i++) at.push((at = []));
    expect(findUnicodeProblem({ deep })).toBeNull();
  });
});
