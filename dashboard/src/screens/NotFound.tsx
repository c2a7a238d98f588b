import { BASE, Link, useLocation } from "../router.tsx";
import { Page } from "../ui/Page.tsx";

export default function NotFound() {
  const { path } = useLocation();
  return (
    <Page title="Page not found">
      <p>
        There is no dashboard page at <code>{path}</code>.
      </p>
      <p>
        <Link to={BASE}>Go to the overview</Link>
      </p>
    </Page>
  );
}
