import { builder } from "./builder.ts";
import { configureEvents } from "./events.ts";
import { withInputLimits } from "./lib/input-limits.ts";
import "./resources/workspace.ts";
import "./resources/client.ts";
import "./resources/lead.ts";
import "./resources/invoice.ts";
import "./resources/payment.ts";
import "./resources/inventory.ts";
import "./resources/project.ts";
import "./resources/task.ts";
import "./resources/request-log.ts";
import "./resources/event.ts";
import "./resources/webhook-endpoint.ts";
import "./resources/webhook-delivery.ts";
import "./resources/agent.ts";

export const schema = withInputLimits(builder.toSchema({ sortSchema: false }));
configureEvents(schema);
