"""The cookies of a signed-in browser (ADR 052).

``pushgrid_session``: the session's secret. HttpOnly (no script reads it), SameSite=Lax (not
sent with a foreign site's POST, image or frame; sent when the browser follows a link here, as
the OpenID provider's redirect back is), Path=/ (the console and the API share the origin),
no Max-Age (gone when the browser closes; the server ends it anyway after
``SignIn.SessionSeconds``). ``Secure`` when the request came over https, or always with
``SignIn.SecureCookies = always`` (behind a TLS-terminating proxy). On plain http at
127.0.0.1 (``make up``) the cookies are sent without ``Secure``: a browser would not send a
Secure cookie back over http, and loopback traffic does not leave the machine.

``pushgrid_csrf``: the session's CSRF token, readable by the console's scripts (not HttpOnly),
which send it back in ``X-CSRF-Token`` (admin_api/csrf.py).

``pushgrid_oidc``: the state of an OpenID Connect sign-in under way (10 minutes, HttpOnly).
"""

from __future__ import annotations

from typing import Final

from starlette.requests import Request
from starlette.responses import Response

from pushgrid.config import SignInSettings
from pushgrid.console.security import CSRF_COOKIE, OIDC_COOKIE, SESSION_COOKIE

__all__ = [
    "CSRF_COOKIE",
    "OIDC_COOKIE",
    "OIDC_COOKIE_SECONDS",
    "SESSION_COOKIE",
    "clear_session_cookies",
    "secure",
    "set_session_cookies",
]

OIDC_COOKIE_SECONDS: Final = 600


def secure(request: Request, settings: SignInSettings) -> bool:
    return settings.signin_secure_cookies == "always" or request.url.scheme == "https"


def set_session_cookies(
    response: Response, request: Request, settings: SignInSettings, cookie: str, csrf: str
) -> None:
    flag = secure(request, settings)
    response.set_cookie(
        SESSION_COOKIE, cookie, path="/", secure=flag, httponly=True, samesite="lax"
    )
    response.set_cookie(CSRF_COOKIE, csrf, path="/", secure=flag, httponly=False, samesite="lax")


def clear_session_cookies(response: Response, request: Request, settings: SignInSettings) -> None:
    flag = secure(request, settings)
    for name, http_only in ((SESSION_COOKIE, True), (CSRF_COOKIE, False)):
        response.delete_cookie(name, path="/", secure=flag, httponly=http_only, samesite="lax")
