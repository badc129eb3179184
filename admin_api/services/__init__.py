"""The service layer: the routes' logic, one module per resource.

Database services take an SQL session (``db``) and own its transactions: each writer is one
``with metrics.sqlstore.transaction(self.db):`` (commit on success, rollback on error), and no
route commits or rolls back; member services take an ``httpx.AsyncClient`` and
:class:`~admin_api.member_client.Member` values and raise
:class:`~admin_api.member_client.MemberFailure`.
"""
