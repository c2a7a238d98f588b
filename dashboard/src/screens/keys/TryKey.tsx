import { useState } from "react";
import { Button } from "../../ui/Button.tsx";

/** What the API answered the try: its status line and body, pretty-printed when JSON. */
interface Answer {
  status: string;
  body: string;
}

const TRY_PATH = "/v1/workspace";

/**
 * Tries a key from the browser: one `GET /v1/workspace` with it as `Authorization: Bearer …`
 * (a Bearer credential wins over the session cookie, so the key alone is what the API judges), the
 * answer shown as the API sent it. Then, for every route: the API reference at /docs, where the
 * key pasted in its Authentication box sends any request.
 *
 * @example <TryKey secret={revealed.secret} />
 */
export function TryKey({ secret }: { secret: string }) {
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    try {
      const response = await fetch(TRY_PATH, { headers: { Authorization: `Bearer ${secret}` } });
      const text = await response.text();
      let body = text;
      try {
        body = JSON.stringify(JSON.parse(text), null, 2);
      } catch {
        // Not JSON: shown as it came.
      }
      setAnswer({ status: `${response.status} ${response.statusText}`.trim(), body });
    } catch {
      setAnswer({ status: "No answer", body: "The server could not be reached." });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="try-key">
      <p>
        Try it:{" "}
        <Button busy={busy} onClick={() => void send()}>
          Send GET {TRY_PATH} with this key
        </Button>{" "}
        or open the <a href="/docs">API reference</a>, paste the key in its Authentication box and send any
        request.
      </p>
      {answer && (
        <figure className="try-key-answer">
          <figcaption data-testid="try-key-status">{answer.status}</figcaption>
          <pre className="code-block" data-testid="try-key-body">
            {answer.body}
          </pre>
        </figure>
      )}
    </div>
  );
}
