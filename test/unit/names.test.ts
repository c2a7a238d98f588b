import { describe, expect, it } from "vitest";
import { splitFullName } from "../../schema/lib/names.ts";

describe("splitFullName", () => {
  it("keeps a single word as the first name", () => {
    expect(splitFullName("Cher")).toEqual({ first: "Cher", last: null });
  });

  it("splits two words into first and last", () => {
    expect(splitFullName("Grace Hopper")).toEqual({ first: "Grace", last: "Hopper" });
  });

  it("splits several words at the first space only", () => {
    expect(splitFullName("Ada King Lovelace")).toEqual({ first: "Ada", last: "King Lovelace" });
    expect(splitFullName("Johann Sebastian von Bach")).toEqual({
      first: "Johann",
      last: "Sebastian von Bach",
    });
  });

  it("ignores leading, trailing and repeated whitespace around the split", () => {
    expect(splitFullName("  Grace   Hopper  ")).toEqual({ first: "Grace", last: "Hopper" });
    expect(splitFullName("\tAlan\n Turing ")).toEqual({ first: "Alan", last: "Turing" });
    expect(splitFullName("   Cher   ")).toEqual({ first: "Cher", last: null });
  });

  it("keeps inner whitespace of the last name as written", () => {
    expect(splitFullName("Ada King  Lovelace")).toEqual({ first: "Ada", last: "King  Lovelace" });
  });
});
