import { Page } from "../ui/Page.tsx";

/** Placeholder: the screen is built on the shared layout and ui/ pieces (see dashboard/README.md). */
export default function Webhooks() {
  return (
    <Page title="Webhooks">
      <p className="muted">Endpoints that receive this workspace's events, their deliveries and replays.</p>
    </Page>
  );
}
