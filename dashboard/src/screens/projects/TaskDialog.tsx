import { maxTextLength } from "../../../../schema/lib/limits.ts";
import { useMutation } from "../../api/hooks.ts";
import {
  CreateTaskDocument,
  type Priority,
  type TaskStatus,
  UpdateTaskDocument,
} from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog, useDialogDraft } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField, TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { FIRST_DAY, LAST_DAY } from "../../ui/format.ts";
import { PRIORITY_TEXT } from "../../ui/PriorityTag.tsx";
import { TASK_STATUS_TEXT, type Task } from "./project-cells.tsx";
import { changedTaskVariables, TASK_PARAMS, type TaskDraft, taskDraft, taskVariables } from "./task-draft.ts";

const most = (name: string) => maxTextLength("Mutation.createTask", name);

/** Adds a task to the project (`task` null) or edits one, sending only what was changed. */
export function TaskDialog({
  open,
  projectId,
  task,
  onClose,
  onSaved,
}: {
  open: boolean;
  projectId: string;
  task: Task | null;
  onClose(): void;
  onSaved(task: Task): void;
}) {
  const [draft, setDraft] = useDialogDraft(open, task?.id, () => taskDraft(task));
  const [create, creating] = useMutation(CreateTaskDocument);
  const [update, updating] = useMutation(UpdateTaskDocument);
  const state = task ? updating : creating;
  const at = (param: string) => fieldError(state.error, param);
  const set = (name: keyof TaskDraft) => (event: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.target.value }));

  const close = () => {
    creating.reset();
    updating.reset();
    onClose();
  };
  const submit = async () => {
    const result = task
      ? (await update({ id: task.id, ...changedTaskVariables(task, draft) }))?.updateTask
      : (await create({ project_id: projectId, ...taskVariables(draft) }))?.createTask;
    if (!result) return;
    creating.reset();
    updating.reset();
    onSaved(result);
  };

  const title = task ? `Edit task ${task.title}` : "Add a task";
  return (
    <Dialog open={open} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={title}>
        <ErrorBanner error={state.error} fields={TASK_PARAMS} />
        <div className="ops-form-grid">
          <TextField
            className="ops-wide"
            label="Title"
            required
            maxLength={most("title")}
            value={draft.title}
            error={at("title")}
            onChange={set("title")}
          />
          <TextAreaField
            className="ops-wide ops-textarea"
            label="Details (optional)"
            maxLength={most("description")}
            value={draft.description}
            error={at("description")}
            onChange={set("description")}
          />
          <SelectField
            label="Status"
            options={optionsOf(TASK_STATUS_TEXT)}
            value={draft.status}
            hint="Done stamps the time it was completed."
            error={at("status")}
            onChange={(event) => setDraft((d) => ({ ...d, status: event.target.value as TaskStatus }))}
          />
          <SelectField
            label="Priority"
            options={optionsOf(PRIORITY_TEXT)}
            value={draft.priority}
            error={at("priority")}
            onChange={(event) => setDraft((d) => ({ ...d, priority: event.target.value as Priority }))}
          />
          <TextField
            label="Assignee e-mail (optional)"
            type="email"
            maxLength={most("assignee_email")}
            spellCheck={false}
            autoComplete="off"
            value={draft.assignee_email}
            error={at("assignee_email")}
            onChange={set("assignee_email")}
          />
          <TextField
            label="Due date (optional)"
            type="date"
            min={FIRST_DAY}
            max={LAST_DAY}
            value={draft.due_date}
            error={at("due_date")}
            onChange={set("due_date")}
          />
        </div>
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            {task ? "Save task" : "Add task"}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
