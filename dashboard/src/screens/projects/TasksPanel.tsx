import { useState } from "react";
import { useMutation } from "../../api/hooks.ts";
import { useOverrides } from "../../api/overrides.ts";
import { usePaged } from "../../api/paged.ts";
import {
  DeleteTaskDocument,
  type TaskStatus,
  TasksDocument,
  UpdateTaskDocument,
} from "../../generated/graphql.ts";
import { useQueryState } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime, formatDay } from "../../ui/format.ts";
import { Loading, Panel } from "../../ui/Page.tsx";
import { isPriority, PRIORITY_TEXT, PriorityTag } from "../../ui/PriorityTag.tsx";
import { Table } from "../../ui/Table.tsx";
import { FilterText } from "../../ui/TextFilter.tsx";
import { isTaskStatus, TASK_STATUS_TEXT, type Task } from "./project-cells.tsx";
import { StatusMenu } from "./StatusMenu.tsx";
import { TaskDialog } from "./TaskDialog.tsx";

/** The tasks' filters in the URL, named apart from a project list's. */
const FILTERS = ["task_status", "priority", "assignee"] as const;

/**
 * A project's tasks: status (changed from a menu; done shows when it was completed), priority, due
 * date and assignee, filtered by status, priority and assignee in the URL, 25 at a time; added,
 * edited and deleted here. `onChanged` is told of every change, for the project's progress.
 */
export function TasksPanel({
  projectId,
  writable,
  onChanged,
}: {
  projectId: string;
  writable: boolean;
  onChanged(): void;
}) {
  const [filters, setFilters] = useQueryState(FILTERS);
  const status = isTaskStatus(filters.task_status) ? filters.task_status : null;
  const priority = isPriority(filters.priority) ? filters.priority : null;
  const tasks = usePaged(
    TasksDocument,
    { project_id: projectId, status, priority, assignee_email: filters.assignee || null },
    (data) => data.tasks,
  );
  const local = useOverrides<Task>();
  const rows = local.apply(tasks.rows);
  const [notice, setNotice] = useState("");
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<Task | null>(null);
  const [deleting, setDeleting] = useState<Task | null>(null);
  const [moving, setMoving] = useState<string | null>(null);
  const [setStatus, settingStatus] = useMutation(UpdateTaskDocument);
  const filtered = Boolean(status || priority || filters.assignee);

  const move = async (task: Task, next: TaskStatus) => {
    setNotice("");
    setMoving(task.id);
    const result = await setStatus({ id: task.id, status: next });
    setMoving(null);
    if (!result) return;
    const moved = result.updateTask;
    local.put(moved);
    setNotice(
      moved.completed_at
        ? `${moved.title} is done: completed ${formatDateTime(moved.completed_at)}.`
        : `${moved.title} moved to ${TASK_STATUS_TEXT[moved.status].toLowerCase()}.`,
    );
    onChanged();
  };

  return (
    <Panel
      title="Tasks"
      actions={
        <Button
          variant="primary"
          disabled={!writable}
          onClick={() => {
            setNotice("");
            setAdding(true);
          }}
        >
          Add task
        </Button>
      }
    >
      <Notice>{notice}</Notice>
      <ErrorBanner error={settingStatus.error} title="The status was not changed." />
      <search className="ops-filters" aria-label="Filter tasks">
        <SelectField
          label="Task status"
          value={status ?? ""}
          options={optionsOf(TASK_STATUS_TEXT, "Any status")}
          onChange={(event) => setFilters({ task_status: event.target.value })}
        />
        <SelectField
          label="Priority"
          value={priority ?? ""}
          options={optionsOf(PRIORITY_TEXT, "Any priority")}
          onChange={(event) => setFilters({ priority: event.target.value })}
        />
        <FilterText
          label="Assignee"
          type="email"
          placeholder="name@example.com"
          value={filters.assignee}
          error={fieldError(tasks.error, "assignee_email")}
          onCommit={(assignee) => setFilters({ assignee })}
        />
        {filtered && (
          <div className="ops-filter-actions">
            <Button
              variant="link"
              onClick={() => setFilters({ task_status: "", priority: "", assignee: "" })}
            >
              Clear filters
            </Button>
          </div>
        )}
      </search>
      <ErrorBanner error={tasks.error} fields={["assignee_email"]} />
      {tasks.loading && rows.length === 0 && <Loading />}
      {(!tasks.loading || rows.length > 0) && (
        <Table
          caption="Tasks"
          rows={rows}
          rowKey={(task) => task.id}
          empty={filtered ? "No task matches these filters." : "No tasks yet."}
          columns={[
            {
              header: "Task",
              cell: (task) => (
                <span className="ops-name">
                  <span className="projects-task-title">{task.title}</span>
                  {task.description && <span className="muted projects-snippet">{task.description}</span>}
                </span>
              ),
            },
            {
              header: "Status",
              cell: (task) => (
                <span className="projects-status">
                  <StatusMenu
                    status={task.status}
                    subject={task.title}
                    disabled={!writable}
                    busy={moving === task.id}
                    onChoose={(next) => void move(task, next)}
                  />
                  {task.completed_at && (
                    <span className="muted projects-completed">
                      Completed {formatDateTime(task.completed_at)}
                    </span>
                  )}
                </span>
              ),
            },
            { header: "Priority", cell: (task) => <PriorityTag priority={task.priority} />, nowrap: true },
            { header: "Due", cell: (task) => formatDay(task.due_date), nowrap: true },
            {
              header: "Assignee",
              cell: (task) =>
                task.assignee_email ? (
                  <span className="projects-assignee">{task.assignee_email}</span>
                ) : (
                  <span className="muted">Unassigned</span>
                ),
            },
            {
              header: "Actions",
              cell: (task) => (
                <div className="row-actions">
                  <Button
                    disabled={!writable}
                    onClick={() => {
                      setNotice("");
                      setEditing(task);
                    }}
                    aria-label={`Edit task ${task.title}`}
                  >
                    Edit
                  </Button>
                  <Button
                    variant="danger"
                    disabled={!writable}
                    onClick={() => {
                      setNotice("");
                      setDeleting(task);
                    }}
                    aria-label={`Delete task ${task.title}`}
                  >
                    Delete
                  </Button>
                </div>
              ),
            },
          ]}
        />
      )}
      {tasks.hasMore && (
        <Actions>
          <Button busy={tasks.loading} onClick={tasks.more}>
            Show more tasks
          </Button>
        </Actions>
      )}
      <TaskDialog
        open={adding || editing !== null}
        projectId={projectId}
        task={editing}
        onClose={() => {
          setAdding(false);
          setEditing(null);
        }}
        onSaved={(task) => {
          if (adding) {
            setAdding(false);
            setNotice(`Task ${task.title} added.`);
            tasks.restart();
          } else {
            setEditing(null);
            local.put(task);
            setNotice(`Task ${task.title} saved.`);
          }
          onChanged();
        }}
      />
      <ConfirmDialog
        subject={deleting}
        title="Delete this task?"
        label="Delete task"
        confirm="Delete task"
        mutation={DeleteTaskDocument}
        variables={(task) => ({ id: task.id })}
        onClose={() => setDeleting(null)}
        onDone={(_, task) => {
          setDeleting(null);
          local.remove(task.id);
          setNotice(`Task ${task.title} deleted.`);
          onChanged();
        }}
      >
        <p>
          <strong>{deleting?.title}</strong> is deleted for good. This cannot be undone.
        </p>
      </ConfirmDialog>
    </Panel>
  );
}
