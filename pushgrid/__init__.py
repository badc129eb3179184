"""pushgrid: a real-time push server with its ops and monitoring stack.

The distribution installs one import namespace. ``pushgrid.protocol`` (here) is the wire protocol
and the exception tree, shared by every part; the parts themselves live in the repository's
top-level folders and are installed under this package (docs/adr/020-one-namespace.md):
``pushgrid.server``, ``pushgrid.client``, ``pushgrid.metrics``, ``pushgrid.admin_api``,
``pushgrid.console``, ``pushgrid.spark_stats``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    # The one version source is pyproject.toml; the installed metadata carries it.
    __version__ = version("pushgrid")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
