import { useEffect, useRef, useState } from "react";
import { Button } from "./Button.tsx";
import { TextField, type TextFieldProps } from "./Field.tsx";
import { Form } from "./Form.tsx";

// The text filters of lists kept in the URL (`useQueryState`): a search box applied on demand,
// and a field applied as one types.

/**
 * The text a filter's field shows: what is typed, following the URL whenever that changes (Back,
 * a link, Clear) unless the URL holds what is being typed (a trailing space stays).
 */
function useDraft(value: string): [string, (text: string) => void] {
  const [draft, setDraft] = useState(value);
  const [shown, setShown] = useState(value);
  if (shown !== value) {
    setShown(value);
    if (draft.trim() !== value) setDraft(value);
  }
  return [draft, setDraft];
}

/**
 * A search box applied on Enter or its Search button (not on each key: a list query per keystroke
 * would be wasted), with Clear while a search is applied.
 *
 * @example <SearchForm label="Search leads" value={filters.search} onSearch={(search) => setFilters({ search })} />
 */
export function SearchForm({
  label,
  value,
  placeholder,
  className,
  onSearch,
}: {
  /** The field's name, e.g. "Search leads". */
  label: string;
  /** The search as the URL holds it. */
  value: string;
  placeholder?: string;
  className?: string;
  /** Puts the search (trimmed; "" for none) into the URL. */
  onSearch(text: string): void;
}) {
  const [draft, setDraft] = useDraft(value);
  return (
    <Form onSubmit={() => onSearch(draft.trim())} role="search" className={className}>
      <TextField
        label={label}
        type="search"
        value={draft}
        placeholder={placeholder}
        maxLength={200}
        onChange={(event) => setDraft(event.target.value)}
      />
      <Button type="submit">Search</Button>
      {value && (
        <Button variant="link" onClick={() => onSearch("")}>
          Clear
        </Button>
      )}
    </Form>
  );
}

export interface FilterTextProps extends Omit<TextFieldProps, "value" | "onChange"> {
  /** The filter as the URL holds it. */
  value: string;
  /** Puts the typed text (trimmed) into the URL: after a pause in typing, or at once on Enter. */
  onCommit(value: string): void;
  /** Milliseconds of quiet before the text is applied. */
  delay?: number;
}

/**
 * A text filter applied after a short pause in typing (each keystroke is not a request), or at
 * once with Enter.
 *
 * @example <FilterText label="Search" value={filters.search} onCommit={(search) => setFilters({ search })} />
 */
export function FilterText({ value, onCommit, delay = 300, ...field }: FilterTextProps) {
  const [draft, setDraft] = useDraft(value);
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
