import type { ReactNode } from "react";
import type { Variables } from "../api/graphql.ts";
import { useMutation } from "../api/hooks.ts";
import type { TypedDocumentString } from "../generated/graphql.ts";
import { Button } from "./Button.tsx";
import { Dialog } from "./Dialog.tsx";
import { ErrorBanner } from "./ErrorBanner.tsx";
import { Actions, Form } from "./Form.tsx";

export interface ConfirmDialogProps<S, TResult, TVariables extends Variables> {
  /** What the action is about (a key, a file…): the dialog is open while it is set. */
  subject: S | null;
  title: string;
  /** The form's accessible name, e.g. "Revoke key". */
  label: string;
  /** The confirm button's text. */
  confirm: string;
  /** "danger" (the default) for what cannot be undone. */
  variant?: "danger" | "primary";
  mutation: TypedDocumentString<TResult, TVariables>;
  variables(subject: S): TVariables;
  onClose(): void;
  /** The mutation succeeded: the caller closes the dialog (by clearing `subject`) and says so. */
  onDone(result: TResult, subject: S): void;
  /** What happens, in a sentence or two. */
  children: ReactNode;
}

/**
 * Asks before a delete, revoke or other lasting action, and runs its mutation: the API's refusal
 * is shown in the dialog (which stays open), Cancel or Escape closes it and forgets the error.
 *
 * @example
 * <ConfirmDialog subject={revoking} title="Revoke key?" label="Revoke key" confirm="Revoke key"
 *   mutation={RevokeApiKeyDocument} variables={(key) => ({ id: key.id })}
 *   onClose={() => setRevoking(null)} onDone={() => setRevoking(null)}>
 *   <p>Requests with this key are refused within seconds.</p>
 * </ConfirmDialog>
 */
export function ConfirmDialog<S, TResult, TVariables extends Variables>({
  subject,
  title,
  label,
  confirm,
  variant = "danger",
  mutation,
  variables,
  onClose,
  onDone,
  children,
}: ConfirmDialogProps<S, TResult, TVariables>) {
  const [run, state] = useMutation(mutation);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (subject === null) return;
    const result = await run(variables(subject));
    if (!result) return;
    state.reset();
    onDone(result, subject);
  };
  return (
    <Dialog open={subject !== null} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={label}>
        {children}
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant={variant} busy={state.pending}>
            {confirm}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
