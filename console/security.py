"""Security headers of the browser surfaces: the console and the admin API's docs (issue 22
item 6). Rules as data; no Dash or Flask here, so the admin API reads the same table.

Every page: no framing (``X-Frame-Options: DENY`` and CSP ``frame-ancestors 'none'``), no MIME
sniffing, no referrer, and a Content-Security-Policy that lets scripts come only from the
server itself (plus the hashes of the inline scripts the page really has: Dash's renderer).
"""

from __future__ import annotations

from collections.abc import Iterable

#: sent with every answer of the console and the admin API
COMMON_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}

#: a page's policy; ``script-src`` is completed with the page's inline-script hashes
PAGE_POLICY: dict[str, tuple[str, ...]] = {
    "default-src": ("'self'",),
    "script-src": ("'self'",),
    # Dash, plotly.js and Swagger UI set style attributes and <style> elements at run time
    "style-src": ("'self'", "'unsafe-inline'"),
    "img-src": ("'self'", "data:", "blob:"),
    "font-src": ("'self'", "data:"),
    "connect-src": ("'self'",),
    "object-src": ("'none'",),
    "base-uri": ("'self'",),
    "form-action": ("'self'",),
    "frame-ancestors": ("'none'",),
}

#: the cookies and header of a browser signed in with a password or single sign-on (ADR 052):
#: the session's secret (HttpOnly), its CSRF token (readable by the console's scripts, which
#: send it back in the header), and a single sign-on under way. The admin API sets and checks
#: them (admin_api/signin_cookies.py, admin_api/csrf.py); the console forwards them.
SESSION_COOKIE = "pushgrid_session"
CSRF_COOKIE = "pushgrid_csrf"
CSRF_HEADER = "X-CSRF-Token"
OIDC_COOKIE = "pushgrid_oidc"

#: answers that are data, not pages (JSON, problem documents, files)
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"


def page_policy(script_hashes: Iterable[str] = ()) -> str:
    """The CSP of a page whose inline scripts have these ``'sha256-...'`` hashes."""
    directives = {**PAGE_POLICY, "script-src": (*PAGE_POLICY["script-src"], *script_hashes)}
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


def page_headers(script_hashes: Iterable[str] = ()) -> dict[str, str]:
    return {**COMMON_HEADERS, "Content-Security-Policy": page_policy(script_hashes)}
