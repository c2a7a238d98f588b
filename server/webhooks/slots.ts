/**
 * docs/api/webhooks.md (fair delivery) and "Limits": how many deliveries may be in flight at once.
 * A delivery is in flight while its lease is live: from its claim until its attempt is recorded.
 */

/** Deliveries one server process sends at once. */
export const PROCESS_DELIVERY_SLOTS = 128;

/**
 * Deliveries of one workspace in flight at once, counted across every process of the deployment:
 * a quarter of one process's slots, so a workspace whose receivers hang leaves the rest to others.
 */
export const WORKSPACE_DELIVERY_SLOTS = PROCESS_DELIVERY_SLOTS / 4;

/**
 * Deliveries in flight at once to one target host (`hostname:port` of the endpoint's URL), whatever
 * the workspace, across the deployment: a slow host holds at most this many slots, and no number of
 * endpoints makes Kontor open more requests than this against one host.
 */
export const HOST_DELIVERY_SLOTS = 4;
