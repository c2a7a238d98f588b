import { useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { DeleteProjectDocument, ProjectDocument } from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { setFlash, takeFlash } from "../../ui/flash.ts";
import { formatDateTime, formatDay } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { ProgressMeter } from "./ProgressMeter.tsx";
import { ProjectDialog } from "./ProjectDialog.tsx";
import { useTaskProgress } from "./progress.ts";
import { CANNOT_WRITE, PROJECTS_PATH, type Project, ProjectStatusTag } from "./project-cells.tsx";
import { TasksPanel } from "./TasksPanel.tsx";
import "../ops.css";
import "./projects.css";

const PATTERN = `${PROJECTS_PATH}/:id`;

/** One project: its fields, its progress (tasks done of all), its tasks; edited and deleted here. */
export default function ProjectScreen() {
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  const { can } = useSession();
  const writable = can("projects.write");
  const query = useQuery(ProjectDocument, { id });
  const [saved, setSaved] = useState<Project | null>(null);
  const fetched = query.data?.project ?? null;
  const project =
    saved && saved.id === id && (!fetched || saved.updated_at >= fetched.updated_at) ? saved : fetched;
  const progress = useTaskProgress(id);
  const [notice, setNotice] = useState(takeFlash);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);

  return (
    <Page
      title={project?.name ?? "Project"}
      actions={
        project && (
          <div className="ops-actions">
            <Button
              variant="primary"
              disabled={!writable}
              onClick={() => {
                setNotice("");
                setEditing(true);
              }}
            >
              Edit project
            </Button>
            <Button variant="danger" disabled={!writable} onClick={() => setDeleting(true)}>
              Delete project
            </Button>
          </div>
        )
      }
    >
      <Link to={PROJECTS_PATH} className="ops-back">
        ← All projects
      </Link>
      {!writable && <RoleNote>{CANNOT_WRITE}</RoleNote>}
      <Notice>{notice}</Notice>
      <ErrorBanner error={query.error} />
      {!project && !query.error && <Loading />}
      {project && (
        <>
          <Panel title="Overview">
            <dl className="facts ops-facts">
              <div>
                <dt>Status</dt>
                <dd>
                  <ProjectStatusTag status={project.status} />
                </dd>
              </div>
              <div>
                <dt>Client</dt>
                <dd>{project.client?.name ?? project.client_id ?? "Internal work"}</dd>
              </div>
              <div>
                <dt>Start</dt>
                <dd>{formatDay(project.start_date)}</dd>
              </div>
              <div>
                <dt>Due</dt>
                <dd>{formatDay(project.due_date)}</dd>
              </div>
              <div>
                <dt>Budget</dt>
                <dd data-testid="project-budget">
                  <Money amount={project.budget} currency={project.currency} />
                </dd>
              </div>
              <div>
                <dt>Updated</dt>
                <dd>{formatDateTime(project.updated_at)}</dd>
              </div>
            </dl>
            {project.description && <p className="projects-description">{project.description}</p>}
            <ProgressMeter progress={progress.progress} />
            <ErrorBanner error={progress.error} title="The progress could not be counted." />
          </Panel>
          <TasksPanel projectId={project.id} writable={writable} onChanged={progress.recount} />
        </>
      )}
      <ProjectDialog
        open={editing}
        project={project}
        onClose={() => setEditing(false)}
        onSaved={(next) => {
          setEditing(false);
          setSaved(next);
          setNotice(`${next.name} saved.`);
        }}
      />
      <ConfirmDialog
        subject={deleting ? project : null}
        title="Delete this project?"
        label="Delete project"
        confirm="Delete project"
        mutation={DeleteProjectDocument}
        variables={(subject) => ({ id: subject.id })}
        onClose={() => setDeleting(false)}
        onDone={(_, subject) => {
          setDeleting(false);
          setFlash(`Project ${subject.name} deleted, with its tasks.`);
          navigate(PROJECTS_PATH);
        }}
      >
        <p>
          <strong>{project?.name}</strong> and all its tasks are deleted for good. This cannot be undone.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
