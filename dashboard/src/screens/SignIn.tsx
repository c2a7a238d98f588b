import { useState } from "react";
import { accounts } from "../api/accounts.ts";
import { ApiError } from "../api/errors.ts";
import { pendingInvitation } from "../invitation-token.ts";
import { BASE, Link, navigate, safeNext, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ErrorBanner } from "../ui/ErrorBanner.tsx";
import { TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { AuthCard } from "../ui/Page.tsx";

export default function SignIn() {
  const session = useSession();
  const { query } = useLocation();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const expired = query.get("expired") === "1" || session.expired;
  const invited = pendingInvitation() !== null;

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const body = await accounts.signIn({ email, password });
      session.apply(body);
      navigate(safeNext(query.get("next") ?? (invited ? `${BASE}/invitations` : null)), { replace: true });
    } catch (failure) {
      setError(failure);
      if (failure instanceof ApiError && failure.code === "invalid_credentials") setPassword("");
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title="Sign in">
      {expired && !error && (
        <div className="banner banner-info" role="status">
          Your session has expired. Sign in again to continue.
        </div>
      )}
      {invited && <p className="muted">Sign in to accept your invitation.</p>}
      <ErrorBanner error={error} />
      <Form onSubmit={submit} aria-label="Sign in">
        <TextField
          label="E-mail"
          type="email"
          name="email"
          autoComplete="username"
          required
          maxLength={254}
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <TextField
          label="Password"
          type="password"
          name="password"
          autoComplete="current-password"
          required
          maxLength={1024}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <Actions>
          <Button type="submit" variant="primary" busy={busy}>
            Sign in
          </Button>
        </Actions>
      </Form>
      <p>
        No account yet? <Link to={`${BASE}/sign-up`}>Create one</Link>
      </p>
    </AuthCard>
  );
}
