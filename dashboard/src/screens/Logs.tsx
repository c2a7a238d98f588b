import { Page } from "../ui/Page.tsx";

/** Placeholder: the screen is built on the shared layout and ui/ pieces (see dashboard/README.md). */
export default function Logs() {
  return (
    <Page title="Logs">
      <p className="muted">Requests made with this workspace's keys and agents: volume, errors and latency by day, and each request.</p>
    </Page>
  );
}
