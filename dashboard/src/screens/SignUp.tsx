import { useEffect, useState } from "react";
import { accounts, type InvitationPreview } from "../api/accounts.ts";
import { forgetInvitation, pendingInvitation, rememberJoined, roleInWords } from "../invitation-token.ts";
import { BASE, Link, navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../ui/ErrorBanner.tsx";
import { TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { AuthCard } from "../ui/Page.tsx";

/**
 * A new user and their own workspace on the free plan. From an invitation link, the invited address
 * is filled in (and kept), and the user joins the inviting workspace instead: a workspace of their
 * own too only when they name one.
 */
export default function SignUp() {
  const session = useSession();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [workspaceName, setWorkspaceName] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [invitation] = useState(pendingInvitation);
  const [invited, setInvited] = useState<InvitationPreview | null>(null);

  useEffect(() => {
    if (!invitation) return;
    let current = true;
    accounts.lookupInvitation(invitation).then(
      (preview) => {
        if (!current) return;
        setInvited(preview);
        setEmail(preview.email);
      },
      (failure: unknown) => current && setError(failure),
    );
    return () => {
      current = false;
    };
  }, [invitation]);

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
      const joined = invited && body.workspaces.find((w) => w.id === invited.workspace.id);
      if (invitation) forgetInvitation();
      session.apply(body, joined ? joined.id : undefined);
      if (joined) {
        rememberJoined(joined.name, joined.role);
        navigate(`${BASE}/invitations`, { replace: true });
      } else navigate(BASE, { replace: true });
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
          {invited ? (
            <>
              You join <strong>{invited.workspace.name}</strong> as {roleInWords(invited.role)} as you sign
              up, with the address the invitation was sent to.
            </>
          ) : (
            "Use the e-mail address the invitation was sent to: you join its workspace as you sign up."
          )}
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
          readOnly={invited !== null}
          hint={invited ? "The invitation was sent to this address: the account gets it." : undefined}
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
          hint={
            invited
              ? `Optional: leave it empty to join ${invited.workspace.name} only; a name makes a workspace of your own too.`
              : "Optional: your workspace on the free plan. You can be invited to others."
          }
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
