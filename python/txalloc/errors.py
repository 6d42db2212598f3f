"""The error a user can act on: a wrong argument, a missing or damaged file. The `txalloc`
command prints its message on one line (`txalloc: error: ...`) and exits with status 2,
instead of a traceback."""


class UserError(Exception):
    """A problem the user can fix; the message names the file or option and what is wrong."""
