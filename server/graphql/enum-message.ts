import { type GraphQLSchema, isEnumType } from "graphql";

const UNKNOWN_VALUE = /Value "((?:[^"\\]|\\.)*)" does not exist in "(\w+)" enum\.(?: Did you mean [^?]*\?)?/;
const NOT_A_STRING = /Enum "(\w+)" cannot represent non-string value: (.*?)\.(?: Did you mean [^?]*\?)?$/;

/**
 * graphql-js words a bad enum value in its own terms ("Value "closed" does not exist in "LeadStage"
 * enum. Did you mean the enum value "lost"?"): said instead with the values a caller may send.
 */
export function explainEnumError(message: string, schema: GraphQLSchema): string {
  const allowed = (typeName: string) => {
    const type = schema.getType(typeName);
    return isEnumType(type)
      ? type
          .getValues()
          .map((value) => value.name)
          .join(", ")
      : "the documented values";
  };
  return message
    .replace(
      UNKNOWN_VALUE,
      (_match, value: string, typeName: string) => `"${value}" is not one of ${allowed(typeName)}.`,
    )
    .replace(
      NOT_A_STRING,
      (_match, typeName: string, value: string) => `${value} is not one of ${allowed(typeName)}.`,
    );
}
