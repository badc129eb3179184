"""pushgrid: a real-time push server with its ops and monitoring stack.

The distribution installs one import namespace. The pieces shared by every part live here:
``pushgrid.protocol`` (the wire protocol and the exception tree), ``pushgrid.config`` (Settings and
its parts), ``pushgrid.kernel`` (addresses, redaction, periodic tasks, throttles) and
``pushgrid.cli`` (the ``pushgrid`` command, the one package that imports every part). The parts
themselves live in the repository's top-level folders and are installed under this package
(docs/adr/020-one-namespace.md, docs/adr/034-one-boundary.md): ``pushgrid.server``,
``pushgrid.client``, ``pushgrid.metrics``, ``pushgrid.admin_api``, ``pushgrid.console``,
``pushgrid.spark_stats``. ``python -m pushgrid`` is the ``pushgrid`` command.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    # The one version source is pyproject.toml; the installed metadata carries it.
    __version__ = version("pushgrid")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
