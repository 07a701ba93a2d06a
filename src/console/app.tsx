import { useEffect, useState } from "preact/hooks";
import { ApiError, api, forgetToken, savedToken, saveToken, UNAUTHORIZED_EVENT } from "./api.ts";
import { useRoute } from "./route.ts";
import { RunPage } from "./run-page.tsx";
import { RunsPage } from "./runs-page.tsx";

const RETRY_MS = 3_000;

type Access =
  | { state: "checking" }
  | { state: "granted" }
  | { state: "token"; message: string }
  | { state: "unreachable"; message: string };

/**
 * The page: asks for the token when the daemon wants one (once per browser session: it is kept in
 * sessionStorage), then shows the run list or one run.
 */
export function App() {
  const route = useRoute();
  const [access, setAccess] = useState<Access>({ state: "checking" });

  const check = async () => {
    try {
      await api("GET", "/runs?limit=1");
      setAccess({ state: "granted" });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      setAccess({ state: "unreachable", message: err instanceof Error ? err.message : String(err) });
    }
  };

  useEffect(() => {
    // Any call the daemon refuses for the token brings the question back, with why. Calls in flight
    // with the refused token all come back 401: the first one says what happened.
    const refused = () => {
      const given = savedToken();
      forgetToken();
      setAccess((previous) =>
        previous.state === "token"
          ? previous
          : {
              state: "token",
              message: given
                ? "The daemon refused that token (401 Unauthorized). Give the token it was started with (SWARM_TOKEN)."
                : "This daemon wants an API token: give the one it was started with (SWARM_TOKEN).",
            },
      );
    };
    addEventListener(UNAUTHORIZED_EVENT, refused);
    void check();
    return () => removeEventListener(UNAUTHORIZED_EVENT, refused);
  }, []);

  // A daemon that is down or restarting is asked again until it answers.
  useEffect(() => {
    if (access.state !== "unreachable") return;
    const timer = setTimeout(() => void check(), RETRY_MS);
    return () => clearTimeout(timer);
  }, [access]);

  return (
    <div class="app">
      <header class="top">
        <a class="brand" href="#/">
          swarmd
        </a>
        <nav>
          <a href="#/">Runs</a>
          <a href="/docs">API docs</a>
        </nav>
      </header>
      {access.state === "checking" && <p class="muted">Connecting to the daemon…</p>}
      {access.state === "unreachable" && (
        <div class="error" role="alert">
          <p>{access.message}</p>
          <p class="muted">Trying again every {RETRY_MS / 1000} s.</p>
        </div>
      )}
      {access.state === "token" && (
        <TokenForm
          message={access.message}
          onToken={(token) => {
            saveToken(token);
            setAccess({ state: "checking" });
            void check();
          }}
        />
      )}
      {access.state === "granted" &&
        (route.page === "run" ? (
          <RunPage key={route.runId} runId={route.runId} selected={route.agentId} />
        ) : (
          <RunsPage />
        ))}
    </div>
  );
}

function TokenForm({ message, onToken }: { message: string; onToken: (token: string) => void }) {
  const [token, setToken] = useState("");
  return (
    <form
      class="token-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (token.trim()) onToken(token.trim());
      }}
    >
      <p class="error" role="alert">
        {message}
      </p>
      <label>
        API token{" "}
        <input
          type="password"
          autocomplete="off"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          autofocus
        />
      </label>
      <button type="submit">Sign in</button>
      <p class="muted">
        It is kept for this browser tab only (the API docs page in this tab uses it too), and sent only to this daemon.
      </p>
    </form>
  );
}
