// swarmd's /docs page: loads the API description from this daemon (with the bearer token the
// visitor gives, when the daemon wants one) and hands it to swagger-ui. Every request stays on this
// origin: the description is passed in as an object and swagger-ui's online validator is off.

(() => {
  const TOKEN_KEY = "swarmd.token";
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const status = document.getElementById("status");

  async function show(token) {
    const answer = await fetch("openapi.json", { headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (answer.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      status.textContent = token ? "That token was refused." : "";
      form.hidden = false;
      input.focus();
      return;
    }
    if (!answer.ok) {
      status.textContent = `GET /openapi.json answered ${answer.status}.`;
      return;
    }
    form.hidden = true;
    status.textContent = "";
    let ui;
    // "Try it out" calls carry the token too.
    const authorize = () => {
      if (ui && token) ui.preauthorizeApiKey("bearerAuth", token);
    };
    ui = SwaggerUIBundle({
      spec: await answer.json(),
      dom_id: "#swagger-ui",
      layout: "BaseLayout",
      presets: [SwaggerUIBundle.presets.apis],
      deepLinking: true,
      validatorUrl: null,
      onComplete: authorize,
    });
    authorize();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value);
    show(input.value).catch((err) => (status.textContent = String(err)));
  });
  show(sessionStorage.getItem(TOKEN_KEY) ?? "").catch((err) => (status.textContent = String(err)));
})();
