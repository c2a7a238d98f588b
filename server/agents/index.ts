// Each endpoint module registers its paths with agentRoutes() when imported.
import "./claim-page.ts";
import "./metadata.ts";
import "./guide.ts";
import "./revoke.ts";
import "./notify.ts";
import "./identity.ts";
import "./token.ts";
