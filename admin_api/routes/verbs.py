"""The route shapes the resources share: create (201 with the new item), change (the item),
delete (204, no body); each with its problems (admin_api/problems.py) in the OpenAPI schema.

One place for them, so a resource's module says only its path, name, model and errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Response, status

from ..problems import problem_responses

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def created(
    router: APIRouter, path: str, name: str, model: type[Any], *errors: int
) -> Callable[[Endpoint], Endpoint]:
    """``POST path``: 201 with ``model``."""
    return router.post(
        path,
        name=name,
        status_code=status.HTTP_201_CREATED,
        response_model=model,
        responses=problem_responses(*errors),
    )


def changed(
    router: APIRouter, method: str, path: str, name: str, model: type[Any], *errors: int
) -> Callable[[Endpoint], Endpoint]:
    """``PUT`` or ``PATCH path``: 200 with ``model``."""
    return router.api_route(
        path,
        methods=[method],
        name=name,
        response_model=model,
        responses=problem_responses(*errors),
    )


def deleted(router: APIRouter, path: str, name: str) -> Callable[[Endpoint], Endpoint]:
    """``DELETE path``: 204 without a body (404 when there is nothing to delete)."""
    return router.delete(
        path,
        name=name,
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        responses=problem_responses(404),
    )


def no_content() -> Response:
    """The answer of a :func:`deleted` route."""
    return Response(status_code=status.HTTP_204_NO_CONTENT)
