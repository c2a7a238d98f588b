import { Page } from "../ui/Page.tsx";

/** Placeholder: the screen is built on the shared layout and ui/ pieces (see dashboard/README.md). */
export default function Storage() {
  return (
    <Page title="Storage">
      <p className="muted">Buckets and files of this workspace, and how much of the plan's quota they use.</p>
    </Page>
  );
}
