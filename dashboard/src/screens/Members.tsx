import { useState } from "react";
import { useMutation, useQuery } from "../api/hooks.ts";
import {
  InvitationsDocument,
  type InvitationsQuery,
  InviteMemberDocument,
  MembersDocument,
  type MembershipRole,
  type MembersQuery,
  RemoveMemberDocument,
  RevokeInvitationDocument,
  UpdateMemberDocument,
} from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ConfirmDialog } from "../ui/ConfirmDialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { SelectField, TextField } from "../ui/Field.tsx";
import { Form } from "../ui/Form.tsx";
import { formatDate, formatDateTime } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { SecretBox } from "../ui/SecretBox.tsx";
import { Table } from "../ui/Table.tsx";

type Member = MembersQuery["members"][number];
type Invitation = InvitationsQuery["invitations"][number];

/** What each role may do, said when a role changes. */
const ROLE_POWERS: Record<MembershipRole, string> = {
  owner: "Owners manage keys, webhooks, agents and members, and may remove other owners.",
  member: "Members work with the business data and logs, but manage no keys, webhooks, agents or members.",
};

const roleName = (role: MembershipRole) => (role === "owner" ? "an owner" : "a member");

const ROLES: { value: MembershipRole; label: string }[] = [
  { value: "member", label: "Member" },
  { value: "owner", label: "Owner" },
];

const ONLY_OWNERS = "Only owners can invite, change and remove members.";

/** Who is in the workspace, invitations (an accept link shown once), role changes and removal. */
export default function Members() {
  const session = useSession();
  const { isOwner } = session;
  const members = useQuery(MembersDocument, {});
  const invitations = useQuery(InvitationsDocument, {}, { skip: !isOwner });
  const [changing, setChanging] = useState<{ member: Member; role: MembershipRole } | null>(null);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [notice, setNotice] = useState("");
  const me = session.body?.user?.id;

  return (
    <Page title="Members">
      {!isOwner && (
        <div className="banner banner-info" role="note">
          {ONLY_OWNERS}
        </div>
      )}
      <Notice>{notice}</Notice>
      <Panel title="People in this workspace">
        <ErrorBanner error={members.error} />
        {members.loading && !members.data && <Loading />}
        {members.data && (
          <Table
            caption="Members"
            rows={members.data.members}
            rowKey={(member) => member.user_id}
            columns={[
              {
                header: "E-mail",
                cell: (member) => (
                  <>
                    {member.email} {member.user_id === me && <span className="tag">you</span>}
                  </>
                ),
              },
              {
                header: "Role",
                cell: (member) => (
                  <SelectField
                    label={`Role of ${member.email}`}
                    className="compact-field"
                    options={ROLES}
                    value={member.role}
                    disabled={!isOwner}
                    onChange={(event) => {
                      setNotice("");
                      setChanging({ member, role: event.target.value as MembershipRole });
                    }}
                  />
                ),
              },
              { header: "Joined", cell: (member) => formatDate(member.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (member) => (
                  <div className="row-actions">
                    <Button
                      variant="danger"
                      disabled={!isOwner}
                      onClick={() => setRemoving(member)}
                      aria-label={`Remove ${member.email}`}
                    >
                      Remove
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
      </Panel>
      <InvitePanel disabled={!isOwner} onInvited={() => invitations.reload()} />
      {isOwner && (
        <Panel title="Pending invitations">
          <ErrorBanner error={invitations.error} />
          {invitations.loading && !invitations.data && <Loading />}
          {invitations.data && (
            <Table
              caption="Pending invitations"
              rows={invitations.data.invitations}
              rowKey={(invitation) => invitation.id}
              empty="No invitations are waiting."
              columns={[
                { header: "E-mail", cell: (invitation) => invitation.email },
                { header: "Role", cell: (invitation) => invitation.role },
                { header: "Sent", cell: (invitation) => formatDateTime(invitation.created_at), nowrap: true },
                {
                  header: "Expires",
                  cell: (invitation) => formatDateTime(invitation.expires_at),
                  nowrap: true,
                },
                {
                  header: "Actions",
                  cell: (invitation) => (
                    <div className="row-actions">
                      <Button
                        variant="danger"
                        aria-label={`Revoke the invitation of ${invitation.email}`}
                        onClick={() => {
                          setNotice("");
                          setRevoking(invitation);
                        }}
                      >
                        Revoke
                      </Button>
                    </div>
                  ),
                },
              ]}
            />
          )}
        </Panel>
      )}
      <ConfirmDialog
        subject={changing}
        title={changing ? `Make ${changing.member.email} ${roleName(changing.role)}?` : "Change role?"}
        label="Change role"
        confirm={changing?.role === "owner" ? "Make owner" : "Make member"}
        variant="primary"
        mutation={UpdateMemberDocument}
        variables={({ member, role }) => ({ user_id: member.user_id, role })}
        onClose={() => setChanging(null)}
        onDone={({ updateMember }, { member }) => {
          setChanging(null);
          setNotice(`${updateMember.email} is now ${roleName(updateMember.role)}.`);
          members.reload();
          if (member.user_id === me) void session.reload();
        }}
      >
        <p>
          {changing && ROLE_POWERS[changing.role]}
          {changing?.member.user_id === me && changing?.role === "member"
            ? " You will no longer manage this workspace."
            : ""}
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={revoking}
        title={`Revoke the invitation of ${revoking?.email ?? "this person"}?`}
        label="Revoke invitation"
        confirm="Revoke invitation"
        mutation={RevokeInvitationDocument}
        variables={(invitation) => ({ id: invitation.id })}
        onClose={() => setRevoking(null)}
        onDone={({ revokeInvitation }) => {
          setRevoking(null);
          setNotice(`The invitation of ${revokeInvitation.email} was revoked.`);
          invitations.reload();
        }}
      >
        <p>Its link stops working at once. You can invite them again later.</p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={removing}
        title={`Remove ${removing?.email ?? "member"}?`}
        label="Remove member"
        confirm="Remove"
        mutation={RemoveMemberDocument}
        variables={(member) => ({ user_id: member.user_id })}
        onClose={() => setRemoving(null)}
        onDone={({ removeMember: { email } }) => {
          const self = removing?.user_id === me;
          setRemoving(null);
          setNotice(`${email} was removed from the workspace.`);
          if (self) void session.reload();
          else members.reload();
        }}
      >
        <p>
          {removing?.user_id === me
            ? "You will lose access to this workspace."
            : "They lose access to this workspace at once. Their own workspaces are not touched."}
        </p>
      </ConfirmDialog>
    </Page>
  );
}

function InvitePanel({ disabled, onInvited }: { disabled: boolean; onInvited(): void }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<MembershipRole>("member");
  const [invite, state] = useMutation(InviteMemberDocument);
  const [sent, setSent] = useState<{ email: string; url: string; expires: string } | null>(null);

  const submit = async () => {
    setSent(null);
    const result = await invite({ input: { email: email.trim(), role } });
    if (!result) return;
    const { invitation, accept_url } = result.inviteMember;
    setSent({ email: invitation.email, url: accept_url, expires: invitation.expires_at });
    setEmail("");
    setRole("member");
    onInvited();
  };

  return (
    <Panel title="Invite someone">
      {disabled && <p className="muted">{ONLY_OWNERS}</p>}
      <ErrorBanner error={state.error} fields={["email"]} />
      {sent && (
        <SecretBox
          label={`Invitation link for ${sent.email}`}
          secret={sent.url}
          note={`Send this link to ${sent.email} yourself: it is shown only once, and works until ${formatDateTime(sent.expires)} for that e-mail address only.`}
        />
      )}
      <Form onSubmit={submit} aria-label="Invite someone" className="inline-form">
        <TextField
          label="E-mail address"
          type="email"
          required
          maxLength={254}
          value={email}
          disabled={disabled}
          error={fieldError(state.error, "email")}
          onChange={(event) => setEmail(event.target.value)}
        />
        <SelectField
          label="Role"
          options={ROLES}
          value={role}
          disabled={disabled}
          onChange={(event) => setRole(event.target.value as MembershipRole)}
        />
        <Button type="submit" variant="primary" busy={state.pending} disabled={disabled}>
          Send invitation
        </Button>
      </Form>
      <p className="field-hint">
        Owners manage keys, webhooks, agents and members; members see the workspace's data and logs.
      </p>
    </Panel>
  );
}
