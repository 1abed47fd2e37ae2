"""Real-time presence over WebSockets: the optional part that needs Channels.

``pip install "whos-online[channels]"``. ``whos_online.realtime.routing`` has the
routes of the ready consumer; this module has what a consumer of a site's own
needs: ``PresenceMixin`` to inherit, or, for one that cannot inherit it, the
connection's lifecycle (``open_connection``, ``connect``, ``heartbeat``,
``disconnect``, ``check``) and ``socket_language``. Who may see and join what is
``whos_online.access``.
"""

try:
    import channels  # noqa: F401
except ImportError as error:
    raise ImportError(
        'whos_online.realtime needs Channels: pip install "whos-online[channels]"'
    ) from error

from whos_online.realtime.consumers import PresenceMixin, WhosOnlineConsumer
from whos_online.realtime.language import socket_language
from whos_online.store.sockets import (
    Connection,
    check,
    connect,
    disconnect,
    heartbeat,
    open_connection,
)

__all__ = [
    "PresenceMixin",
    "WhosOnlineConsumer",
    "socket_language",
    "Connection",
    "open_connection",
    "connect",
    "heartbeat",
    "disconnect",
    "check",
]
