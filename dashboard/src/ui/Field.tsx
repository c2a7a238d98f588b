import {
  type InputHTMLAttributes,
  type ReactNode,
  type SelectHTMLAttributes,
  type TextareaHTMLAttributes,
  useId,
} from "react";

interface FieldFrame {
  label: string;
  /** Shown under the field and read with it. */
  hint?: ReactNode;
  /** The field's own error (an API error whose `param` names it). */
  error?: string | undefined;
}

/** The ids of a field's hint and error, for its control's `aria-describedby`. */
const describedBy = (id: string, { hint, error }: Omit<FieldFrame, "label">) =>
  [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;

/** A field's hint and error under its control, with the ids `describedBy` names. */
function FieldNotes({ id, hint, error }: { id: string } & Omit<FieldFrame, "label">) {
  return (
    <>
      {hint && (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p className="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </>
  );
}

export type TextFieldProps = FieldFrame & Omit<InputHTMLAttributes<HTMLInputElement>, "id">;

/** An input with its label, hint and error tied to it for assistive technology. */
export function TextField({ label, hint, error, className, ...input }: TextFieldProps) {
  const id = useId();
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy(id, { hint, error })}
        {...input}
      />
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

export type TextAreaFieldProps = FieldFrame & Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, "id">;

/**
 * A multi-line text field (notes, a description), framed as `TextField`: its label, hint and
 * error tied to it for assistive technology.
 *
 * @example <TextAreaField label="Notes (optional)" rows={3} value={notes} error={fieldError(error, "notes")} onChange={…} />
 */
export function TextAreaField({ label, hint, error, className, ...area }: TextAreaFieldProps) {
  const id = useId();
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy(id, { hint, error })}
        {...area}
      />
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

/**
 * A select's options from an enum's texts, in their order, with an option for "any" ("") first
 * when `any` is given.
 *
 * @example optionsOf({ todo: "To do", done: "Done" }, "Any status") // [{ value: "", label: "Any status" }, { value: "todo", … }, …]
 */
export function optionsOf<T extends string>(text: Record<T, string>, any?: string) {
  return [
    ...(any === undefined ? [] : [{ value: "", label: any }]),
    ...(Object.entries(text) as [T, string][]).map(([value, label]) => ({ value, label })),
  ];
}

export type SelectFieldProps = FieldFrame &
  Omit<SelectHTMLAttributes<HTMLSelectElement>, "id"> & {
    options: ReadonlyArray<{ value: string; label: string }>;
  };

export function SelectField({ label, hint, error, options, className, ...select }: SelectFieldProps) {
  const id = useId();
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy(id, { hint, error })}
        {...select}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

export interface CheckboxGroupProps extends FieldFrame {
  options: ReadonlyArray<{ value: string; label: string }>;
  value: ReadonlySet<string>;
  onChange(next: Set<string>): void;
  disabled?: boolean;
}

/** A fieldset of checkboxes (the scopes of a key): the legend labels the group, each box its own label. */
export function CheckboxGroup({
  label,
  hint,
  error,
  options,
  value,
  onChange,
  disabled,
}: CheckboxGroupProps) {
  const id = useId();
  const toggle = (option: string, on: boolean) => {
    const next = new Set(value);
    if (on) next.add(option);
    else next.delete(option);
    onChange(next);
  };
  return (
    <fieldset className="field checkbox-group" aria-describedby={describedBy(id, { hint, error })}>
      <legend>{label}</legend>
      {hint && (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <div className="checkbox-grid">
        {options.map((option) => (
          <label key={option.value} className="checkbox">
            <input
              type="checkbox"
              checked={value.has(option.value)}
              disabled={disabled}
              onChange={(event) => toggle(option.value, event.target.checked)}
            />
            <span>{option.label}</span>
          </label>
        ))}
      </div>
      {error && (
        <p className="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </fieldset>
  );
}
