import { useState } from "react";
import { accounts } from "../api/accounts.ts";
import { forgetInvitation, pendingInvitation } from "../invitation-token.ts";
import { BASE, Link, navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../ui/ErrorBanner.tsx";
import { TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { AuthCard } from "../ui/Page.tsx";

/** A new user and their own workspace on the free plan; with an invitation pending, they join its workspace too. */
export default function SignUp() {
  const session = useSession();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [workspaceName, setWorkspaceName] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const invitation = pendingInvitation();

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const body = await accounts.signUp({
        email,
        password,
        ...(workspaceName.trim() && { workspace_name: workspaceName.trim() }),
        ...(invitation && { invitation_token: invitation }),
      });
      if (invitation) forgetInvitation();
      session.apply(body);
      navigate(BASE, { replace: true });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title="Create your account">
      {invitation && (
        <p className="muted">
          Use the e-mail address the invitation was sent to: you join its workspace as you sign up.
        </p>
      )}
      <ErrorBanner error={error} fields={["email", "password", "workspace_name"]} />
      <Form onSubmit={submit} aria-label="Sign up">
        <TextField
          label="E-mail"
          type="email"
          name="email"
          autoComplete="email"
          required
          maxLength={254}
          value={email}
          error={fieldError(error, "email")}
          onChange={(e) => setEmail(e.target.value)}
        />
        <TextField
          label="Password"
          type="password"
          name="new-password"
          autoComplete="new-password"
          required
          minLength={12}
          maxLength={1024}
          hint="At least 12 characters."
          value={password}
          error={fieldError(error, "password")}
          onChange={(e) => setPassword(e.target.value)}
        />
        <TextField
          label="Workspace name"
          name="workspace"
          autoComplete="organization"
          maxLength={100}
          hint="Optional: your workspace on the free plan. You can be invited to others."
          value={workspaceName}
          error={fieldError(error, "workspace_name")}
          onChange={(e) => setWorkspaceName(e.target.value)}
        />
        <Actions>
          <Button type="submit" variant="primary" busy={busy}>
            Create account
          </Button>
        </Actions>
      </Form>
      <p>
        Already have an account? <Link to={`${BASE}/sign-in`}>Sign in</Link>
      </p>
    </AuthCard>
  );
}
