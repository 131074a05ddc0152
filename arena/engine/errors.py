"""Errors of the rules engine.

Both subclass :class:`ValueError` so that callers who only care that some input was bad
(a CLI, a gateway turning an answer into a protocol error) can catch one type.
"""


class EngineError(ValueError):
    """Base class of every error the engine raises on bad input."""


class NotationError(EngineError):
    """A card or an action in text form could not be parsed."""


class RulesError(EngineError):
    """A rules configuration names an unknown option, a bad value or an impossible mix."""


class IllegalActionError(EngineError):
    """An action is not legal in the current state; the state is left unchanged."""


class ReplayError(EngineError):
    """A replay file is malformed or does not re-simulate."""
