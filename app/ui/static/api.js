// The REST API as the page uses it: the key from session storage on every call, and errors
// kept as the API wrote them (a 422 names the field and the rule).

const KEY_NAME = "galera-doe.api-key";

// The page lives at <api>/ui/: the API is the folder above it, whatever prefix a proxy adds.
export const API_BASE = new URL("../", window.location.href.split("#")[0]);

export function storedKey() {
  return window.sessionStorage.getItem(KEY_NAME);
}

export function storeKey(key) {
  window.sessionStorage.setItem(KEY_NAME, key);
}

export function forgetKey() {
  window.sessionStorage.removeItem(KEY_NAME);
}

/** An answer the API refused: `status` and its JSON body as sent. */
export class ApiError extends Error {
  constructor(status, body, method, path) {
    super(describe(status, body));
    this.status = status;
    this.body = body;
    this.method = method;
    this.path = path;
  }
}

/** Called with the error of any 401, so the page can ask for a key again. */
let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/**
 * Call the API: `params` become the query string (an array value repeats its name), `body`
 * is sent as JSON. Resolves to the parsed JSON answer; rejects with ApiError.
 */
export async function api(path, { method = "GET", params = null, body = undefined } = {}) {
  const url = new URL(path.replace(/^\//, ""), API_BASE);
  for (const [name, value] of Object.entries(params || {})) {
    if (value === null || value === undefined || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(name, String(item));
    }
  }
  const headers = { Accept: "application/json" };
  const key = storedKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, { detail: `cannot reach the API at ${API_BASE} (${error.message})` },
      method, path);
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  if (!response.ok) {
    const error = new ApiError(response.status, parsed, method, path);
    if (response.status === 401) onUnauthorized(error);
    throw error;
  }
  return parsed;
}

/** The API's error in words: each refused field of a 422 as "loc: msg", else its detail. */
export function describe(status, body) {
  const prefix = status ? `HTTP ${status}` : "network error";
  const detail = body && body.detail;
  if (Array.isArray(detail)) {
    return `${prefix}: ${detail.map(fieldError).join("; ")}`;
  }
  return `${prefix}: ${typeof detail === "string" ? detail : JSON.stringify(body)}`;
}

export function fieldError(item) {
  const where = Array.isArray(item.loc) ? item.loc.join(".") : String(item.loc ?? "");
  return where ? `${where}: ${item.msg}` : String(item.msg);
}

/** Lines to show for an error: one per refused field of a 422. */
export function errorLines(error) {
  if (error instanceof ApiError) {
    const detail = error.body && error.body.detail;
    const head = error.status ? `HTTP ${error.status}` : "network error";
    if (Array.isArray(detail)) return [head, ...detail.map(fieldError)];
    return [`${head}: ${typeof detail === "string" ? detail : JSON.stringify(error.body)}`];
  }
  return [String(error && error.message ? error.message : error)];
}
