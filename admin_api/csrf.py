"""CSRF protection of cookie-authenticated requests (pure; ADR 052).

A browser sends the session cookie with any request to the admin API, including one a foreign
page makes it send; an API token (``Authorization``) it never adds by itself. So a request
authenticated by the cookie that may change something (POST, PUT, PATCH, DELETE) must also carry
the session's CSRF token in the ``X-CSRF-Token`` header (a synchronizer token: the server keeps
it with the session and compares). A foreign page cannot read it: it is in a cookie of this
origin (``pushgrid_csrf``, readable by the console's own scripts, which copy it into the header)
and in the sign-in answer. SameSite=Lax on the session cookie is a second line, not the defence.
"""

from __future__ import annotations

import hmac
from typing import Final

from pushgrid.console.security import CSRF_HEADER

__all__ = ["CSRF_HEADER", "SAFE_METHODS", "csrf_problem"]

SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def csrf_problem(method: str, expected: str, sent: str | None) -> str | None:
    """Why a cookie-authenticated request must be refused (None: it may go on)."""
    if method.upper() in SAFE_METHODS:
        return None
    if not sent:
        return f"a signed-in browser's {method.upper()} needs the {CSRF_HEADER} header"
    if not hmac.compare_digest(expected.encode(), sent.strip().encode()):
        return f"the {CSRF_HEADER} header does not match this session"
    return None
