import { useState } from "react";
import { useOverrides } from "../../api/overrides.ts";
import { usePaged } from "../../api/paged.ts";
import { ProjectsDocument } from "../../generated/graphql.ts";
import { Link, navigate, useQueryState } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { setFlash, takeFlash } from "../../ui/flash.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { FilterText } from "../../ui/TextFilter.tsx";
import { useClientOptions } from "./clients.ts";
import { ProjectDialog } from "./ProjectDialog.tsx";
import {
  CANNOT_WRITE,
  isProjectStatus,
  PROJECT_STATUS_TEXT,
  type Project,
  ProjectStatusTag,
  projectDates,
  projectPath,
} from "./project-cells.tsx";
import "../ops.css";
import "./projects.css";

const FILTERS = ["status", "client_id", "search"] as const;

/**
 * The workspace's projects: status, client, dates and budget, filtered by status, client and a
 * search kept in the URL (`?status=&client_id=&search=`), 25 at a time. A project is created or
 * edited here; it opens on its own screen with its tasks.
 */
export default function Projects() {
  const { can } = useSession();
  const writable = can("projects.write");
  const [filters, setFilters] = useQueryState(FILTERS);
  const status = isProjectStatus(filters.status) ? filters.status : null;
  const projects = usePaged(
    ProjectsDocument,
    { status, client_id: filters.client_id || null, search: filters.search || null },
    (data) => data.projects,
  );
  const clients = useClientOptions(
    { value: "", label: "Any client" },
    filters.client_id ? { id: filters.client_id } : null,
  );
  const local = useOverrides<Project>();
  const rows = local.apply(projects.rows);
  const [notice, setNotice] = useState(takeFlash);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Project | null>(null);
  const filtered = Boolean(status || filters.client_id || filters.search);

  return (
    <Page
      title="Projects"
      actions={
        <Button
          variant="primary"
          disabled={!writable}
          onClick={() => {
            setNotice("");
            setCreating(true);
          }}
        >
          New project
        </Button>
      }
    >
      {!writable && <RoleNote>{CANNOT_WRITE}</RoleNote>}
      <Notice>{notice}</Notice>
      <Panel title="All projects">
        <search className="ops-filters" aria-label="Filter projects">
          <FilterText
            label="Search"
            type="search"
            placeholder="Name or description"
            value={filters.search}
            onCommit={(search) => setFilters({ search })}
          />
          <SelectField
            label="Status"
            value={status ?? ""}
            options={optionsOf(PROJECT_STATUS_TEXT, "Any status")}
            onChange={(event) => setFilters({ status: event.target.value })}
          />
          <SelectField
            label="Client"
            value={filters.client_id}
            options={clients.options}
            hint={clients.more ? "The 100 newest clients are listed." : undefined}
            onChange={(event) => setFilters({ client_id: event.target.value })}
          />
          {filtered && (
            <div className="ops-filter-actions">
              <Button variant="link" onClick={() => setFilters({ status: "", client_id: "", search: "" })}>
                Clear filters
              </Button>
            </div>
          )}
        </search>
        <ErrorBanner error={projects.error} />
        {projects.loading && rows.length === 0 && <Loading />}
        {(!projects.loading || rows.length > 0) && (
          <Table
            caption="Projects"
            rows={rows}
            rowKey={(project) => project.id}
            empty={
              filtered
                ? "No project matches these filters."
                : writable
                  ? "No projects yet. Create the first one."
                  : "No projects yet."
            }
            columns={[
              {
                header: "Project",
                cell: (project) => (
                  <span className="ops-name">
                    <Link to={projectPath(project.id)}>{project.name}</Link>
                    {project.description && (
                      <span className="muted projects-snippet">{project.description}</span>
                    )}
                  </span>
                ),
              },
              {
                header: "Status",
                cell: (project) => <ProjectStatusTag status={project.status} />,
                nowrap: true,
              },
              {
                header: "Client",
                cell: (project) =>
                  project.client?.name ?? <span className="muted">{project.client_id ?? "Internal"}</span>,
              },
              { header: "Dates", cell: (project) => projectDates(project) },
              {
                header: "Budget",
                cell: (project) => <Money amount={project.budget} currency={project.currency} />,
              },
              {
                header: "Actions",
                cell: (project) => (
                  <div className="row-actions">
                    <Button
                      disabled={!writable}
                      onClick={() => {
                        setNotice("");
                        setEditing(project);
                      }}
                      aria-label={`Edit ${project.name}`}
                    >
                      Edit
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
        {projects.hasMore && (
          <Actions>
            <Button busy={projects.loading} onClick={projects.more}>
              Show more projects
            </Button>
          </Actions>
        )}
      </Panel>
      <ProjectDialog
        open={creating || editing !== null}
        project={editing}
        onClose={() => {
          setCreating(false);
          setEditing(null);
        }}
        onSaved={(project) => {
          if (creating) {
            setCreating(false);
            setFlash(`Project ${project.name} created. Add its tasks below.`);
            navigate(projectPath(project.id));
            return;
          }
          setEditing(null);
          local.put(project);
          setNotice(`${project.name} saved.`);
        }}
      />
    </Page>
  );
}
