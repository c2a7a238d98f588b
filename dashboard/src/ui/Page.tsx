import { type ReactNode, useEffect, useRef } from "react";

export interface PageProps {
  title: string;
  /** Beside the title: the screen's main action. */
  actions?: ReactNode;
  children: ReactNode;
}

/**
 * A screen's frame: sets the document title, and moves focus to the heading when the screen
 * changes, so a screen reader announces where the user is.
 */
export function Page({ title, actions, children }: PageProps) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Kontor`;
    if (document.activeElement === document.body || document.activeElement?.closest("nav"))
      heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-header">
        <h1 id="page-title" ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {actions && <div className="page-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** A part of a screen with its own heading. */
export function Panel({
  title,
  children,
  actions,
}: {
  title: string;
  children: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <section className="panel">
      <header className="panel-header">
        <h2>{title}</h2>
        {actions && <div className="panel-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p className="loading" role="status">
      {label}
    </p>
  );
}

/** The frame of the signed-out screens (sign-in, sign-up, invitation): a card with the brand. */
export function AuthCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="auth-card">
      <span className="brand">
        <img src="/logo.svg" alt="" width={28} height={28} />
        Kontor
      </span>
      <Page title={title}>{children}</Page>
    </div>
  );
}
