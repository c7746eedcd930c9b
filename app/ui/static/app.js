// The dashboard: asks for an API key once per browser tab, then shows the view the address's
// hash names: #/ (experiments), #/experiments/ID, #/compare?ids=1,2.

import { api, forgetKey, storedKey, storeKey, whenUnauthorized } from "./api.js";
import { compareView } from "./compare.js";
import { errorBox, fill, h } from "./dom.js";
import { experimentView } from "./experiment.js";
import { listView } from "./list.js";
import { currentRoute } from "./router.js";

const view = document.getElementById("view");
const keyPanel = document.getElementById("key-panel");
const keyForm = document.getElementById("key-form");
const keyInput = document.getElementById("key-input");
const keyError = document.getElementById("key-error");
const forget = document.getElementById("forget-key");

let leave = null; // the current view's clean-up (stops its polling)

function askForKey(message = "") {
  if (leave) leave();
  leave = null;
  fill(view);
  keyPanel.hidden = false;
  forget.hidden = true;
  keyError.textContent = message;
  keyInput.focus();
}

keyForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) return;
  storeKey(key);
  try {
    await api("/experiments", { params: { limit: 1 } }); // proves the key before going on
  } catch (error) {
    forgetKey();
    if (error.status !== 401) keyError.textContent = error.message;
    return;
  }
  keyInput.value = "";
  keyPanel.hidden = true;
  route();
});

forget.addEventListener("click", () => {
  forgetKey();
  askForKey("The key was forgotten.");
});

whenUnauthorized((error) => {
  forgetKey();
  const detail = error.body && error.body.detail;
  askForKey(`The API refused the key: ${typeof detail === "string" ? detail : error.message}`);
});

function route() {
  if (!storedKey()) {
    askForKey();
    return;
  }
  keyPanel.hidden = true;
  forget.hidden = false;
  if (leave) leave();
  leave = null;
  fill(view);
  const [path, query] = currentRoute();
  for (const link of document.querySelectorAll("[data-nav]")) {
    const active = link.dataset.nav === (path.startsWith("/compare") ? "compare" : "list");
    link.classList.toggle("active", active);
  }
  const experiment = path.match(/^\/experiments\/(\d+)$/);
  try {
    if (experiment) leave = experimentView(view, Number(experiment[1]), query);
    else if (path === "/compare") leave = compareView(view, query);
    else if (path === "/" || path === "") leave = listView(view, query);
    else fill(view, h("p", { class: "error" }, `No page ${path}.`), h("a", { href: "#/" }, "Experiments"));
  } catch (error) {
    fill(view, errorBox(error));
  }
}

window.addEventListener("hashchange", route);
route();
