import { type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, useId } from "react";

interface FieldFrame {
  label: string;
  /** Shown under the field and read with it. */
  hint?: ReactNode;
  /** The field's own error (an API error whose `param` names it). */
  error?: string | undefined;
}

export type TextFieldProps = FieldFrame & Omit<InputHTMLAttributes<HTMLInputElement>, "id">;

/** An input with its label, hint and error tied to it for assistive technology. */
export function TextField({ label, hint, error, className, ...input }: TextFieldProps) {
  const id = useId();
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...input} />
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
    </div>
  );
}

export type SelectFieldProps = FieldFrame &
  Omit<SelectHTMLAttributes<HTMLSelectElement>, "id"> & {
    options: ReadonlyArray<{ value: string; label: string }>;
  };

export function SelectField({ label, hint, error, options, className, ...select }: SelectFieldProps) {
  const id = useId();
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...select}>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
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
    <fieldset
      className="field checkbox-group"
      aria-describedby={[hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined}
    >
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
