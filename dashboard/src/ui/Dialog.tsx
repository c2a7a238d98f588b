import {
  type Dispatch,
  type ReactNode,
  type SetStateAction,
  useEffect,
  useId,
  useRef,
  useState,
} from "react";

export interface DialogProps {
  open: boolean;
  title: string;
  onClose(): void;
  children: ReactNode;
}

/**
 * A modal on the native <dialog>: the browser traps focus in it, closes it on Escape, and gives
 * focus back to what opened it. `onClose` is called when the browser closed it (Escape), not when
 * `open` turned false.
 */
export function Dialog({ open, title, onClose, children }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  // The close event comes a task after close(). When `open` turned false, the caller knows already;
  // and when it turned true again before the event came (a second role change right after the
  // first), acting on the event would close the new dialog.
  const closedByProp = useRef(false);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) {
      closedByProp.current = true;
      dialog.close();
    }
  }, [open]);
  const closed = () => {
    if (closedByProp.current) closedByProp.current = false;
    else onClose();
  };
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={closed}>
      {open && (
        <>
          <h2 id={titleId}>{title}</h2>
          {children}
        </>
      )}
    </dialog>
  );
}

/**
 * A dialog form's draft: made by `initial()` whenever the dialog opens or turns to another
 * `subject` (the record edited, or its id), and kept as typed while it stays open.
 *
 * @example const [draft, setDraft] = useDialogDraft(open, project?.id, () => projectDraft(project));
 */
export function useDialogDraft<T>(
  open: boolean,
  subject: unknown,
  initial: () => T,
): [T, Dispatch<SetStateAction<T>>] {
  const [draft, setDraft] = useState(initial);
  const [drawn, setDrawn] = useState({ open, subject });
  if (drawn.open !== open || drawn.subject !== subject) {
    setDrawn({ open, subject });
    if (open) setDraft(initial());
  }
  return [draft, setDraft];
}
