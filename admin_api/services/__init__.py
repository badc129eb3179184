"""The service layer: the routes' logic, one module per resource.

Database services take a :class:`~sqlalchemy.orm.Session` and own its transactions (each writer
commits on success and rolls back on error); member services take an ``httpx.AsyncClient`` and
:class:`~admin_api.member_client.Member` values and raise
:class:`~admin_api.member_client.MemberFailure`.
"""
