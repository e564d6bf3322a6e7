"""User mistakes: reported as one message, never a traceback, with nothing registered."""


class UserError(Exception):
    """Base of every error caused by what the user asked for (config, catalog, placement)."""
