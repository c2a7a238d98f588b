import { useEffect, useRef, useState } from "react";
import { TextField, type TextFieldProps } from "../../ui/Field.tsx";

export interface FilterTextProps extends Omit<TextFieldProps, "value" | "onChange"> {
  /** The filter as the URL holds it. */
  value: string;
  /** Puts the typed text (trimmed) into the URL: after a pause in typing, or at once on Enter. */
  onCommit(value: string): void;
  /** Milliseconds of quiet before the text is applied. */
  delay?: number;
}

/**
 * A text filter of a list kept in the URL: what is typed is applied after a short pause (each
 * keystroke is not a request), or at once with Enter; a change of the URL (Back, a link, Clear
 * filters) shows in the field.
 *
 * @example <FilterText label="Search" value={filters.search} onCommit={(search) => setFilters({ search })} />
 */
export function FilterText({ value, onCommit, delay = 300, ...field }: FilterTextProps) {
  const [draft, setDraft] = useState(value);
  const [shown, setShown] = useState(value);
  // The URL changed: show it, unless it is what is being typed (a trailing space stays).
  if (shown !== value) {
    setShown(value);
    if (draft.trim() !== value) setDraft(value);
  }
  const commit = useRef(onCommit);
  commit.current = onCommit;
  useEffect(() => {
    if (draft.trim() === value) return;
    const timer = setTimeout(() => commit.current(draft.trim()), delay);
    return () => clearTimeout(timer);
  }, [draft, value, delay]);
  return (
    <TextField
      autoComplete="off"
      spellCheck={false}
      {...field}
      value={draft}
      onChange={(event) => setDraft(event.target.value)}
      onKeyDown={(event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          commit.current(draft.trim());
        }
      }}
    />
  );
}
