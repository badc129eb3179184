"""``/api/docs``: Swagger UI from the admin API itself (issue 22 item 6, issue 21 item 10).

The page and its assets are served locally: Swagger UI's bundle and stylesheet from the pinned
PyPI package ``fastapi-offline`` (its ``static/`` folder), the initialiser from
``docs_assets/swagger-init.js``. No third-party script, no inline script (the page's CSP allows
``'self'`` only), no token persisted (``persistAuthorization`` off): the docs work on a machine
without internet access and cannot leak the token typed into "Authorize".
"""

from __future__ import annotations

import html
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushgrid.console.security import page_headers

ASSETS_URL = "/api/docs/assets"
#: file name -> (where it is, media type); nothing else is served under ASSETS_URL
ASSETS: dict[str, tuple[Path, str]] = {
    "swagger-ui-bundle.js": (
        Path(str(files("fastapi_offline") / "static" / "swagger-ui-bundle.js")),
        "text/javascript; charset=utf-8",
    ),
    "swagger-ui.css": (
        Path(str(files("fastapi_offline") / "static" / "swagger-ui.css")),
        "text/css; charset=utf-8",
    ),
    "favicon.png": (Path(str(files("fastapi_offline") / "static" / "favicon.png")), "image/png"),
    "swagger-init.js": (
        Path(__file__).with_name("docs_assets") / "swagger-init.js",
        "text/javascript; charset=utf-8",
    ),
}

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" type="image/png" href="{assets}/favicon.png">
<link rel="stylesheet" href="{assets}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi}"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/swagger-init.js"></script>
</body>
</html>
"""


def add_docs(app: FastAPI, docs_url: str, openapi_url: str) -> None:
    """The docs page at ``docs_url`` and its assets under :data:`ASSETS_URL`."""

    async def docs_page(request: Request) -> HTMLResponse:
        page = PAGE.format(
            title=html.escape(f"{app.title} - Swagger UI"),
            assets=ASSETS_URL,
            openapi=html.escape(openapi_url),
        )
        return HTMLResponse(page, headers=page_headers())

    async def docs_asset(request: Request) -> Response:
        found = ASSETS.get(request.path_params["name"])
        if found is None:
            raise HTTPException(404, "no such docs asset")
        path, media_type = found
        return FileResponse(path, media_type=media_type, headers={"Cache-Control": "max-age=3600"})

    # plain routes (not API routes): public, no role, not in the OpenAPI document
    app.router.routes.append(Route(docs_url, docs_page, methods=["GET"]))
    app.router.routes.append(Route(f"{ASSETS_URL}/{{name}}", docs_asset, methods=["GET"]))
