// The address's hash is the page's state: #/path?query. Views read it and write filters and
// tabs back, so a reload or a shared link shows the same thing.

/** The hash as a path and its query: "#/compare?ids=1,2" -> ["/compare", {ids: "1,2"}]. */
export function currentRoute() {
  const hash = window.location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = hash.split("?");
  return [path, Object.fromEntries(new URLSearchParams(query))];
}

/** Change the hash's query without a new view (e.g. a filter or a tab). */
export function setQuery(values) {
  const [path, query] = currentRoute();
  const merged = { ...query, ...values };
  for (const [name, value] of Object.entries(merged)) {
    if (value === null || value === undefined || value === "") delete merged[name];
  }
  const text = new URLSearchParams(merged).toString();
  window.history.replaceState(null, "", `#${path}${text ? `?${text}` : ""}`);
}
