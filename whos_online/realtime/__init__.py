"""Real-time presence over WebSockets: the optional part that needs Channels.

``pip install "whos-online[channels]"``. ``routing`` has the routes,
``consumers`` the ready consumer and the mixin for a site's own, and ``hub``
each process's push; who may see and join what is ``whos_online.access``.
"""

try:
    import channels  # noqa: F401
except ImportError as error:
    raise ImportError(
        'whos_online.realtime needs Channels: pip install "whos-online[channels]"'
    ) from error
