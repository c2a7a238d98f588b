import { maxTextLength } from "../../../../schema/lib/limits.ts";
import { useMutation } from "../../api/hooks.ts";
import { CreateProjectDocument, type ProjectStatus, UpdateProjectDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog, useDialogDraft } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField, TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { FIRST_DAY, LAST_DAY } from "../../ui/format.ts";
import { CURRENCY_PATTERN, MONEY_PATTERN } from "../../ui/money.ts";
import { useClientOptions } from "./clients.ts";
import { PROJECT_STATUS_TEXT, type Project } from "./project-cells.tsx";
import {
  changedProjectVariables,
  PROJECT_PARAMS,
  type ProjectDraft,
  projectDraft,
  projectVariables,
} from "./project-draft.ts";

const most = (name: string) => maxTextLength("Mutation.createProject", name);

/** Creates a project (`project` null) or edits one, sending only what was changed. */
export function ProjectDialog({
  open,
  project,
  onClose,
  onSaved,
}: {
  open: boolean;
  project: Project | null;
  onClose(): void;
  onSaved(project: Project): void;
}) {
  const [draft, setDraft] = useDialogDraft(open, project?.id, () => projectDraft(project));
  const clients = useClientOptions(
    { value: "", label: "No client (internal work)" },
    project?.client ?? null,
    {
      skip: !open,
    },
  );
  const [create, creating] = useMutation(CreateProjectDocument);
  const [update, updating] = useMutation(UpdateProjectDocument);
  const state = project ? updating : creating;
  const at = (param: string) => fieldError(state.error, param);
  const set = (name: keyof ProjectDraft) => (event: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.target.value }));

  const close = () => {
    creating.reset();
    updating.reset();
    onClose();
  };
  const submit = async () => {
    const result = project
      ? (await update({ id: project.id, ...changedProjectVariables(project, draft) }))?.updateProject
      : (await create(projectVariables(draft)))?.createProject;
    if (!result) return;
    creating.reset();
    updating.reset();
    onSaved(result);
  };

  const title = project ? `Edit ${project.name}` : "New project";
  return (
    <Dialog open={open} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={title}>
        <ErrorBanner error={state.error} fields={PROJECT_PARAMS} />
        <div className="ops-form-grid">
          <TextField
            className="ops-wide"
            label="Name"
            required
            maxLength={most("name")}
            value={draft.name}
            error={at("name")}
            onChange={set("name")}
          />
          <TextAreaField
            className="ops-wide ops-textarea"
            label="Description (optional)"
            maxLength={most("description")}
            value={draft.description}
            error={at("description")}
            onChange={set("description")}
          />
          <SelectField
            label="Client"
            options={clients.options}
            value={draft.client_id}
            hint={clients.more ? "The 100 newest clients are listed." : undefined}
            error={at("client_id")}
            onChange={set("client_id")}
          />
          <SelectField
            label="Status"
            options={optionsOf(PROJECT_STATUS_TEXT)}
            value={draft.status}
            error={at("status")}
            onChange={(event) => setDraft((d) => ({ ...d, status: event.target.value as ProjectStatus }))}
          />
          <TextField
            label="Start date (optional)"
            type="date"
            min={FIRST_DAY}
            max={LAST_DAY}
            value={draft.start_date}
            error={at("start_date")}
            onChange={set("start_date")}
          />
          <TextField
            label="Due date (optional)"
            type="date"
            min={FIRST_DAY}
            max={LAST_DAY}
            hint="Not before the start date."
            value={draft.due_date}
            error={at("due_date")}
            onChange={set("due_date")}
          />
          <TextField
            label="Budget (optional)"
            inputMode="decimal"
            pattern={MONEY_PATTERN}
            hint="e.g. 12000.00: up to 2 decimals."
            value={draft.budget}
            error={at("budget")}
            onChange={set("budget")}
          />
          <TextField
            label="Currency"
            required
            maxLength={3}
            pattern={CURRENCY_PATTERN}
            spellCheck={false}
            autoCapitalize="characters"
            hint="ISO 4217 code of the budget, e.g. USD."
            value={draft.currency}
            error={at("currency")}
            onChange={(event) => setDraft((d) => ({ ...d, currency: event.target.value.toUpperCase() }))}
          />
        </div>
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            {project ? "Save changes" : "Create project"}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
