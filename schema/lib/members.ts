import { createHash } from "node:crypto";
import { randomBase62 } from "./api-key-secret.ts";

/** Members a workspace may have, counting its pending invitations. */
export const MAX_MEMBERS = 100;
export const INVITATION_TTL_SECONDS = 7 * 24 * 3600;
/** The dashboard page an invitation link opens; the token rides in the fragment, so no server log sees it. */
export const INVITATION_PAGE_PATH = "/dashboard/invitations";

const INVITATION_TOKEN = /^inv_[0-9A-Za-z]{43}$/;

export const newInvitationToken = () => `inv_${randomBase62(43)}`;
export const isInvitationToken = (token: string) => INVITATION_TOKEN.test(token);
export const hashInvitationToken = (token: string) => createHash("sha256").update(token).digest("hex");
