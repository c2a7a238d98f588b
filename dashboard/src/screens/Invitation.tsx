import { useEffect, useState } from "react";
import { accounts } from "../api/accounts.ts";
import {
  forgetInvitation,
  pendingInvitation,
  rememberInvitation,
  tokenFromHash,
} from "../invitation-token.ts";
import { BASE, Link, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ErrorBanner } from "../ui/ErrorBanner.tsx";
import { Actions } from "../ui/Form.tsx";
import { AuthCard, Page } from "../ui/Page.tsx";

/**
 * The invitation link `/dashboard/invitations#token=inv_…`: the token is kept for this tab and
 * taken out of the address bar; a signed-in user accepts it here, a signed-out one signs in or
 * signs up first and comes back.
 */
export default function Invitation() {
  const session = useSession();
  const { hash } = useLocation();
  const [token] = useState(() => tokenFromHash(hash) ?? pendingInvitation());
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [joined, setJoined] = useState<string | null>(null);

  useEffect(() => {
    if (!token) return;
    rememberInvitation(token);
    if (location.hash) history.replaceState(null, "", location.pathname);
  }, [token]);

  const accept = async () => {
    if (!token) return;
    setBusy(true);
    setError(undefined);
    try {
      const before = new Set(session.body?.workspaces.map((w) => w.id));
      const body = await accounts.acceptInvitation(token);
      const added = body.workspaces.find((w) => !before.has(w.id));
      forgetInvitation();
      session.apply(body, added?.id);
      setJoined(added?.name ?? "the workspace");
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const content = !token ? (
    <p>This invitation link is incomplete. Open the exact link you were sent, or ask for a new invitation.</p>
  ) : joined ? (
    <>
      <div className="banner banner-notice" role="status">
        You joined {joined}.
      </div>
      <p>
        <Link to={BASE}>Go to its overview</Link>
      </p>
    </>
  ) : session.status === "signed-in" ? (
    <>
      <p>
        You have been invited to a Kontor workspace. Accept it as <strong>{session.body?.user?.email}</strong>
        ?
      </p>
      <ErrorBanner error={error} />
      <Actions>
        <Button variant="primary" busy={busy} onClick={() => void accept()}>
          Accept invitation
        </Button>
      </Actions>
    </>
  ) : (
    <>
      <p>
        You have been invited to a Kontor workspace. Sign in to accept it, or create an account with the
        e-mail address the invitation was sent to.
      </p>
      <Actions>
        <Link className="button button-secondary" to={`${BASE}/sign-up`}>
          Create an account
        </Link>
        <Link
          className="button button-primary"
          to={`${BASE}/sign-in?next=${encodeURIComponent(`${BASE}/invitations`)}`}
        >
          Sign in
        </Link>
      </Actions>
    </>
  );
  return session.status === "signed-in" ? (
    <Page title="Invitation">{content}</Page>
  ) : (
    <AuthCard title="Invitation">{content}</AuthCard>
  );
}
