import { builder } from "./builder.ts";
import "./resources/workspace.ts";
import "./resources/client.ts";
import "./resources/lead.ts";

export const schema = builder.toSchema({ sortSchema: false });
