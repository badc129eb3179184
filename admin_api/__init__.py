"""The pushgrid admin API (FastAPI): members, live and pipeline statistics, subjects, sessions,
jobs, audit and API tokens under ``/api/v1`` (docs/admin-api.md).

Its SQL tables live in the store (``metrics.sqlstore.admin_models``, ADR 015); the web
application lives in :mod:`admin_api.main` (``create_app``) and the command line in
:mod:`admin_api.cli` (``register``).
"""
