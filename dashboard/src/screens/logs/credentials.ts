import { useQuery } from "../../api/hooks.ts";
import { LogAgentsDocument, LogKeysDocument } from "../../generated/graphql.ts";
import { useSession } from "../../session.tsx";
import type { KeyInfo } from "./log-format.tsx";
import { shortId } from "./log-format.tsx";

/** What the logs know of the workspace's credentials, to name them. */
export interface CredentialNames {
  /** A key's or an agent's name; its short id when the viewer may not list it (a member and keys). */
  label(id: string | null): string;
  /** The workspace's keys, for an owner (undefined while loading, and for a member). */
  keys: KeyInfo[] | undefined;
  /** The key list failed (or may not be read): keys are typed in by id. */
  keysUnavailable: boolean;
}

/**
 * Names the credentials of request logs and audit events: API keys (`key_…`) through apiKeys, which
 * only an owner may list, and agents (`areg_…`) through agentRegistrations (agents.read).
 *
 * @example
 * const { label } = useCredentialNames();
 * label("key_01J…") // "Billing sync"
 */
export function useCredentialNames(): CredentialNames {
  const { isOwner, can } = useSession();
  const keys = useQuery(LogKeysDocument, {}, { skip: !isOwner });
  const agents = useQuery(LogAgentsDocument, {}, { skip: !can("agents.read") });
  const keyList = keys.data?.apiKeys.data;
  const agentList = agents.data?.agentRegistrations.data;
  const label = (id: string | null): string => {
    if (!id) return "no key";
    const key = keyList?.find((k) => k.id === id);
    if (key) return key.name ?? `${key.prefix}…`;
    const agent = agentList?.find((a) => a.id === id);
    if (agent) return `Agent ${agent.agent_name ?? agent.login_hint ?? shortId(id)}`;
    return shortId(id);
  };
  return { label, keys: keyList, keysUnavailable: !isOwner || Boolean(keys.error) };
}
