import type { DocumentNodeLike } from "./typed-document.js";

/**
 * Prints an executable GraphQL document (operations and fragments) as query text, so the SDK
 * can send the generated documents without depending on `graphql`. The output is compact and
 * parses to the same document.
 */

interface Node {
  kind: string;
  // biome-ignore lint/suspicious/noExplicitAny: any AST node's other fields, printed by kind.
  [key: string]: any;
}

const name = (node: Node | undefined): string => (node ? String(node.value) : "");

const join = (parts: ReadonlyArray<string | undefined>, separator = " "): string =>
  parts.filter((part) => part).join(separator);

const wrap = (start: string, inner: string, end: string): string => (inner ? `${start}${inner}${end}` : "");

function list(nodes: ReadonlyArray<Node> | undefined, separator = ", "): string {
  return (nodes ?? []).map(printNode).join(separator);
}

function printNode(node: Node): string {
  switch (node.kind) {
    case "Document":
      return list(node.definitions, "\n\n");
    case "OperationDefinition": {
      const header = join([
        node.operation,
        join([name(node.name), wrap("(", list(node.variableDefinitions), ")")], ""),
        list(node.directives, " "),
      ]);
      const anonymousQuery =
        !node.name &&
        !node.directives?.length &&
        !node.variableDefinitions?.length &&
        node.operation === "query";
      return anonymousQuery ? printNode(node.selectionSet) : `${header} ${printNode(node.selectionSet)}`;
    }
    case "VariableDefinition":
      return join([
        `${printNode(node.variable)}: ${printNode(node.type)}${node.defaultValue ? ` = ${printNode(node.defaultValue)}` : ""}`,
        list(node.directives, " "),
      ]);
    case "SelectionSet":
      return `{ ${list(node.selections, " ")} }`;
    case "Field":
      return join([
        `${node.alias ? `${name(node.alias)}: ` : ""}${name(node.name)}${wrap("(", list(node.arguments), ")")}`,
        list(node.directives, " "),
        node.selectionSet ? printNode(node.selectionSet) : "",
      ]);
    case "Argument":
    case "ObjectField":
      return `${name(node.name)}: ${printNode(node.value)}`;
    case "FragmentSpread":
      return join([`...${name(node.name)}`, list(node.directives, " ")]);
    case "InlineFragment":
      return join([
        "...",
        node.typeCondition ? `on ${printNode(node.typeCondition)}` : "",
        list(node.directives, " "),
        printNode(node.selectionSet),
      ]);
    case "FragmentDefinition":
      return join([
        `fragment ${name(node.name)}${wrap("(", list(node.variableDefinitions), ")")}`,
        `on ${printNode(node.typeCondition)}`,
        list(node.directives, " "),
        printNode(node.selectionSet),
      ]);
    case "Directive":
      return `@${name(node.name)}${wrap("(", list(node.arguments), ")")}`;
    case "Variable":
      return `$${name(node.name)}`;
    case "IntValue":
    case "FloatValue":
    case "EnumValue":
      return String(node.value);
    case "StringValue":
      return JSON.stringify(node.value);
    case "BooleanValue":
      return node.value ? "true" : "false";
    case "NullValue":
      return "null";
    case "ListValue":
      return `[${list(node.values)}]`;
    case "ObjectValue":
      return `{${list(node.fields)}}`;
    case "NamedType":
      return name(node.name);
    case "ListType":
      return `[${printNode(node.type)}]`;
    case "NonNullType":
      return `${printNode(node.type)}!`;
    default:
      throw new TypeError(`Cannot print a GraphQL ${node.kind} node.`);
  }
}

/**
 * The query text of a document: its source when it was parsed from one, else printed.
 *
 * @example
 * ```ts
 * documentText(LeadDocument); // "query Lead($id: ID!) { lead(id: $id) { id … } }"
 * ```
 */
export function documentText(document: DocumentNodeLike | string | string): string {
  if (typeof document === "string") return document;
  if (document instanceof String) return document.toString();
  const source = document.loc?.source?.body;
  if (typeof source === "string" && source.length > 0) return source;
  return printNode(document as unknown as Node);
}

/**
 * Whether the document's operation (`operationName`, or the only one) is a mutation.
 *
 * @example
 * ```ts
 * isMutation(CreateLeadDocument); // true
 * isMutation("query { workspace { id } }"); // false
 * ```
 */
export function isMutation(document: DocumentNodeLike | string | string, operationName?: string): boolean {
  if (typeof document === "string" || document instanceof String) {
    const text = document.toString().replace(/#[^\n\r]*/g, "");
    if (operationName) return new RegExp(`\\bmutation\\s+${operationName}\\b`).test(text);
    return /^\s*mutation\b/.test(text);
  }
  const operations = (document.definitions as Node[]).filter(
    (definition) => definition.kind === "OperationDefinition",
  );
  const operation = operationName
    ? operations.find((definition) => name(definition.name) === operationName)
    : operations[0];
  return operation?.operation === "mutation";
}
