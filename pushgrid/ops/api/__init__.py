"""The admin API's answers, one type each for the route that sends them and the console that
reads them (issue 30 item 2, ADR 059).

These are the pydantic models that are the admin API's OpenAPI schema: the routes answer with
them (``admin_api/schemas.py`` re-exports them under the same names) and the console decodes the
same JSON with ``Model.model_validate`` and keeps it in the browser as ``model_dump(mode="json")``.
A class name here is a schema name in ``/api/v1/openapi.json``: renaming one changes the document.

* :mod:`.me`: who a token is, and the roles;
* :mod:`.subjects`: a test publish's answer and a subject's presence;
* :mod:`.sessions`: a page of client sessions (and :class:`~.sessions.Page`, every page's base);
* :mod:`.history`: the per-second history of every member and the cluster;
* :mod:`.cluster`: the cluster merged from the members' views (mode, health, quorum);
* :mod:`.trends`: a trend series of the pipeline's window statistics;
* :mod:`.jobs`, :mod:`.audit`: the pipeline's runs and the audit log.
"""
