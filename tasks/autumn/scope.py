"""Scopes: the chain of local bindings an expression is evaluated in.

Scoping in Autumn is dynamic (see ``compat``): a called lambda's scope has the
*caller's* scope as parent. The chain ends at ``None``, after which names resolve in
the runtime's globals dictionary. A scope made by an object constructor is flagged
``instance``: Cell arguments skip it when they take their snapshot.
"""

from __future__ import annotations


class Scope:
    """One level of local bindings."""

    __slots__ = ("vars", "parent", "instance")

    def __init__(self, vars: dict, parent: Scope | None, instance: bool = False) -> None:
        self.vars = vars
        self.parent = parent
        self.instance = instance

    def find(self, name: str) -> Scope | None:
        """The nearest scope along the chain that binds ``name``, or None."""
        scope = self
        while scope is not None:
            if name in scope.vars:
                return scope
            scope = scope.parent
        return None
