import { useEffect, useState } from "react";
import { accounts, type InvitationPreview } from "../api/accounts.ts";
import {
  forgetInvitation,
  joinedWorkspace,
  pendingInvitation,
  rememberInvitation,
  roleInWords,
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
 * taken out of the address bar; the invitation says which workspace and role it is for; a
 * signed-in user accepts it here, a signed-out one signs in (and comes back) or signs up (and
 * lands here, told what they joined).
 */
export default function Invitation() {
  const session = useSession();
  const { hash } = useLocation();
  const [token] = useState(() => tokenFromHash(hash) ?? pendingInvitation());
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [joined, setJoined] = useState(() => joinedWorkspace());
  const [invited, setInvited] = useState<InvitationPreview | null>(null);

  // Said once: a later visit to this screen does not repeat it.
  useEffect(() => void joinedWorkspace(true), []);

  useEffect(() => {
    if (!token) return;
    rememberInvitation(token);
    if (location.hash) history.replaceState(null, "", location.pathname);
    let current = true;
    accounts.lookupInvitation(token).then(
      (preview) => current && setInvited(preview),
      (failure: unknown) => current && setError(failure),
    );
    return () => {
      current = false;
    };
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
      setJoined({ workspace: added?.name ?? "the workspace", role: added?.role ?? "member" });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const about = invited ? (
    <>
      You have been invited to join <strong>{invited.workspace.name}</strong> as {roleInWords(invited.role)}.
    </>
  ) : (
    "You have been invited to a Kontor workspace."
  );
  const content = joined ? (
    <>
      <div className="banner banner-notice" role="status">
        You joined {joined.workspace} as {roleInWords(joined.role)}.
      </div>
      <p>
        <Link to={BASE}>Go to its overview</Link>
      </p>
    </>
  ) : !token ? (
    <p>This invitation link is incomplete. Open the exact link you were sent, or ask for a new invitation.</p>
  ) : session.status === "signed-in" ? (
    <>
      <p>
        {about} Accept it as <strong>{session.body?.user?.email}</strong>?
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
        {about} Sign in to accept it, or create an account with the e-mail address the invitation was sent to
        {invited ? ` (${invited.email})` : ""}.
      </p>
      <ErrorBanner error={error} />
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
