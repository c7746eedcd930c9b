"""Errors the use cases raise; the API turns each into one HTTP status."""


class NotFoundError(LookupError):
    """The thing asked for does not exist (404)."""

    def __init__(self, what: str, identifier: int | str) -> None:
        super().__init__(f"{what} {identifier} not found")


class ConflictError(RuntimeError):
    """The request is well-formed but the resource's state does not allow it (409)."""


class UnavailableError(RuntimeError):
    """A service the request needs (database, broker) cannot be reached (503)."""


class HeaderError(ValueError):
    """A request header breaks a rule (422, located in the header)."""

    def __init__(self, header: str, rule: str) -> None:
        super().__init__(f"{header}: {rule}")
        self.header = header
        self.rule = rule
