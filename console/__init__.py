"""The pushgrid ops console: Plotly Dash pages over the admin API (docs/console.md).

:func:`console.app.create_dash_app` builds the Dash app around a provider factory;
:func:`console.mount.mount_console` serves it from the admin API at ``/console``;
``python -m console --api URL`` runs it on its own.
"""
