import { type TextareaHTMLAttributes, useId } from "react";

/** A textarea with its label, hint and error tied to it, as `TextField` is for an input. */
export function TextAreaField({
  label,
  hint,
  error,
  className,
  ...textarea
}: {
  label: string;
  hint?: string;
  error?: string | undefined;
} & Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, "id">) {
  const id = useId();
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={["field", className].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      <textarea id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...textarea} />
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
