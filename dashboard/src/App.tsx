import { Suspense, useEffect } from "react";
import { Layout } from "./Layout.tsx";
import { BASE, navigate, safeNext, useLocation } from "./router.tsx";
import { findRoute, NOT_FOUND } from "./routes.ts";
import { useSession } from "./session.tsx";
import { Button } from "./ui/Button.tsx";
import { ErrorBanner } from "./ui/ErrorBanner.tsx";
import { Loading } from "./ui/Page.tsx";

/** Picks the screen for the URL, sending the user where the screen's access rule says. */
export function App() {
  const session = useSession();
  const { path, query } = useLocation();
  const route = findRoute(path);
  const signedIn = session.status === "signed-in";
  const signedOut = session.status === "signed-out";

  const redirect =
    route?.access === "user" && signedOut
      ? `${BASE}/sign-in?${new URLSearchParams({ next: `${path}${location.search}`, ...(session.expired && { expired: "1" }) })}`
      : route?.access === "guest" && signedIn
        ? safeNext(query.get("next"))
        : null;

  useEffect(() => {
    if (redirect) navigate(redirect, { replace: true });
  }, [redirect]);

  if (session.status === "loading" || redirect) {
    return (
      <div className="auth">
        <Loading />
      </div>
    );
  }
  if (session.status === "unreachable") {
    return (
      <div className="auth">
        <div className="auth-card">
          <ErrorBanner error={session.loadError} title="The dashboard could not load." />
          <Button variant="primary" onClick={() => void session.reload()}>
            Try again
          </Button>
        </div>
      </div>
    );
  }
  const Screen = route?.screen ?? NOT_FOUND;
  const content = (
    <Suspense fallback={<Loading />}>
      <Screen />
    </Suspense>
  );
  return signedIn ? <Layout>{content}</Layout> : <div className="auth">{content}</div>;
}
