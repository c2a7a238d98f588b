import { useQuery } from "../../api/hooks.ts";
import { ProjectClientsDocument } from "../../generated/graphql.ts";

export interface ClientChoice {
  value: string;
  label: string;
}

/**
 * The workspace's clients as a select's options (the API's 100 newest: a page is what one
 * request may ask for), with `keep` added when it is not among them, so a project's own client or
 * the filter in the URL always shows.
 */
export function useClientOptions(
  first: ClientChoice,
  keep: { id: string; name?: string | null } | null,
  options: { skip?: boolean } = {},
): { options: ClientChoice[]; more: boolean; error: unknown } {
  const query = useQuery(ProjectClientsDocument, {}, options);
  const clients = query.data?.clients.data ?? [];
  const list: ClientChoice[] = [
    first,
    ...clients.map((client) => ({
      value: client.id,
      label: client.company_name ? `${client.name} (${client.company_name})` : client.name,
    })),
  ];
  if (keep?.id && !list.some((option) => option.value === keep.id))
    list.push({ value: keep.id, label: keep.name ?? keep.id });
  return { options: list, more: query.data?.clients.has_more ?? false, error: query.error };
}
