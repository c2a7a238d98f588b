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
 * focus back to what opened it.
 */
export function Dialog({ open, title, onClose, children }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose}>
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
