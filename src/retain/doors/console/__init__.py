"""The memory console: server-rendered pages at ``/console`` of ``retain serve``, for the
operator who asks what an agent believes, who told it, and whether it can be taken back.

``pages`` holds the routes (each page calls the service's verbs as the signed-in
principal), ``session`` who a request acts as and the guards of its forms, ``render``
the templates (``templates/``), their filters and the charts' geometry; ``static/`` holds
the one style sheet and the one small script, served by the server itself.
"""

from retain.doors.console.pages import add

__all__ = ["add"]
