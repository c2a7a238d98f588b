import { useState } from "react";
import { Button } from "../../ui/Button.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Form } from "../../ui/Form.tsx";

/**
 * A search box applied on Enter or its button (not on each key: a list query per keystroke would
 * be wasted), showing what the URL holds whenever that changes (Back, a link, Clear).
 */
export function SearchForm({
  label,
  value,
  placeholder,
  onSearch,
}: {
  /** The field's name, e.g. "Search leads". */
  label: string;
  value: string;
  placeholder?: string;
  onSearch(text: string): void;
}) {
  const [draft, setDraft] = useState(value);
  const [draftOf, setDraftOf] = useState(value);
  if (draftOf !== value) {
    setDraftOf(value);
    setDraft(value);
  }
  return (
    <Form onSubmit={() => onSearch(draft.trim())} role="search" className="crm-search">
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
