import { useId, useRef, useState } from "react";
import { Button } from "./Button.tsx";

export interface SecretBoxProps {
  label: string;
  secret: string;
  /** Why it is shown once, and what to do with it. */
  note?: string;
}

/**
 * A secret the server shows this once (a new API key, an invitation link): read-only, selected
 * on focus, with a copy button whose outcome is announced.
 */
export function SecretBox({
  label,
  secret,
  note = "Copy it now: it is shown only once and cannot be shown again.",
}: SecretBoxProps) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [status, setStatus] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setStatus("Copied.");
    } catch {
      // No clipboard permission: leave it selected for Ctrl+C.
      input.current?.select();
      setStatus("Select and copy it with Ctrl+C (⌘C).");
    }
  };
  return (
    <div className="secret-box">
      <label htmlFor={id}>{label}</label>
      <div className="secret-row">
        <input
          id={id}
          ref={input}
          className="secret-value"
          readOnly
          value={secret}
          spellCheck={false}
          aria-describedby={`${id}-note`}
          onFocus={(event) => event.currentTarget.select()}
        />
        <Button variant="primary" onClick={() => void copy()}>
          Copy
        </Button>
      </div>
      <p className="field-hint" id={`${id}-note`}>
        {note}
      </p>
      <p className="copy-status" role="status">
        {status}
      </p>
    </div>
  );
}
