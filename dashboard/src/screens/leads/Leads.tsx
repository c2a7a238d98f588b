import { useState } from "react";
import { Link, navigate, useQueryState } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { Page } from "../../ui/Page.tsx";
import { SearchForm } from "../../ui/TextFilter.tsx";
import "../crm.css";
import { LeadFormDialog } from "./LeadFormDialog.tsx";
import { LeadsTable } from "./LeadsTable.tsx";
import { LEADS_PATH, leadPath, ONLY_WRITERS } from "./lead-shared.tsx";
import { Pipeline } from "./Pipeline.tsx";

/**
 * The workspace's leads, as a pipeline by stage (`?view=pipeline`, the default) or as a table
 * with the list's filters (`?view=table`); the view, stage and search are in the URL. New leads
 * are made in a dialog; a lead's own screen edits, converts and deletes it.
 */
export default function Leads() {
  const canWrite = useSession().can("leads.write");
  const [filters, setFilters] = useQueryState(["view", "stage", "search"]);
  const view = filters.view === "table" ? "table" : "pipeline";
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<{ text: string; id: string } | null>(null);
  // A new lead: the lists are asked again.
  const [generation, setGeneration] = useState(0);

  const viewLink = (to: "pipeline" | "table", label: string) => {
    const query = new URLSearchParams({ view: to, ...(filters.search && { search: filters.search }) });
    if (to === "table" && filters.stage) query.set("stage", filters.stage);
    return (
      <Link
        to={`${LEADS_PATH}?${query}`}
        className="crm-view-link"
        aria-current={view === to ? "page" : undefined}
        onClick={(event) => {
          // The view replaces the entry, as a filter does.
          event.preventDefault();
          navigate(`${LEADS_PATH}?${query}`, { replace: true });
        }}
      >
        {label}
      </Link>
    );
  };

  return (
    <Page
      title="Leads"
      actions={
        <Button variant="primary" disabled={!canWrite} onClick={() => setCreating(true)}>
          New lead
        </Button>
      }
    >
      {!canWrite && <RoleNote>{ONLY_WRITERS}</RoleNote>}
      {notice && (
        <Notice>
          {notice.text} <Link to={leadPath(notice.id)}>Open it</Link>
        </Notice>
      )}
      <div className="crm-toolbar">
        <nav className="crm-views" aria-label="View">
          {viewLink("pipeline", "Pipeline")}
          {viewLink("table", "Table")}
        </nav>
        <SearchForm
          label="Search leads"
          value={filters.search}
          placeholder="Name, company or e-mail"
          className="crm-search"
          onSearch={(search) => setFilters({ search })}
        />
      </div>
      {view === "pipeline" ? (
        <Pipeline key={`${filters.search}:${generation}`} search={filters.search} canWrite={canWrite} />
      ) : (
        <LeadsTable
          key={generation}
          stage={filters.stage}
          search={filters.search}
          onStage={(stage) => setFilters({ stage })}
        />
      )}
      <LeadFormDialog
        open={creating}
        lead={null}
        onClose={() => setCreating(false)}
        onSaved={(lead) => {
          setCreating(false);
          setNotice({ text: `Lead ${lead.full_name} created.`, id: lead.id });
          setGeneration((n) => n + 1);
        }}
      />
    </Page>
  );
}
