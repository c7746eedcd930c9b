"""Request and response bodies of the REST API (pydantic v2), one module per resource:
`experiments`, `trials` (and observations), `designs` (previews), `suggestions` (and the
closed loop, with the strategy fields), `analysis` (and plot slices), `service` (health,
targets); `common` holds the types and error bodies they share."""
