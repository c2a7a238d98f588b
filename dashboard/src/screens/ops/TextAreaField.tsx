import { type TextareaHTMLAttributes, useId } from "react";

export type TextAreaFieldProps = {
  label: string;
  hint?: string;
  error?: string | undefined;
} & Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, "id">;

/** A textarea with its label, hint and error tied to it, like TextField. */
export function TextAreaField({ label, hint, error, className, ...area }: TextAreaFieldProps) {
  const id = useId();
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={["field", "ops-textarea", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <textarea id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...area} />
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
