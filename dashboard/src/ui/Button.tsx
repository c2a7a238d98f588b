import type { ButtonHTMLAttributes, MouseEvent } from "react";

type Variant = "primary" | "secondary" | "danger" | "link";

export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  variant?: Variant;
  /** Shows the action running: the button is busy (not disabled, so focus stays on it). */
  busy?: boolean;
}

/**
 * A button. `disabled` is rendered as aria-disabled: the button stays focusable and is announced
 * as unavailable, and a click does nothing while the attribute is there. An owner-only action shown
 * to a member is such a button; the server refuses the action anyway (owner_required) if the
 * attribute is taken away.
 */
export function Button({
  variant = "secondary",
  busy = false,
  disabled = false,
  type = "button",
  className,
  children,
  onClick,
  ...rest
}: ButtonProps) {
  const click = (event: MouseEvent<HTMLButtonElement>) => {
    if (busy || event.currentTarget.getAttribute("aria-disabled") === "true") {
      event.preventDefault();
      return;
    }
    onClick?.(event);
  };
  return (
    <button
      type={type}
      className={["button", `button-${variant}`, className].filter(Boolean).join(" ")}
      aria-busy={busy || undefined}
      aria-disabled={disabled || undefined}
      onClick={click}
      {...rest}
    >
      {children}
    </button>
  );
}
