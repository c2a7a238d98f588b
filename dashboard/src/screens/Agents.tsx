import { Page } from "../ui/Page.tsx";

/** Placeholder: the screen is built on the shared layout and ui/ pieces (see dashboard/README.md). */
export default function Agents() {
  return (
    <Page title="Agents">
      <p className="muted">AI agents registered with this workspace, trusted identity providers and agent settings.</p>
    </Page>
  );
}
