"""The one error type the DoE engine raises for bad input."""


class DomainError(ValueError):
    """Input that breaks a rule of the domain.

    `field` is a dotted path into the caller's input (e.g. ``factors.2.high``) so a service can
    point the user at the exact place; `rule` is a sentence that states the broken rule.
    """

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule
