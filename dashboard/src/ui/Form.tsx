import type { FormEvent, FormHTMLAttributes, ReactNode } from "react";

export interface FormProps extends Omit<FormHTMLAttributes<HTMLFormElement>, "onSubmit"> {
  onSubmit(): void | Promise<void>;
  children: ReactNode;
}

/** A form whose submit (button or Enter) runs `onSubmit` in the page; the browser's own checks (required, type=email) run first. */
export function Form({ onSubmit, children, className, ...rest }: FormProps) {
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    void onSubmit();
  };
  return (
    <form className={["form", className].filter(Boolean).join(" ")} onSubmit={submit} {...rest}>
      {children}
    </form>
  );
}

/** The buttons row at the end of a form or dialog. */
export function Actions({ children }: { children: ReactNode }) {
  return <div className="actions">{children}</div>;
}
