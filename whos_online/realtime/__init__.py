"""Real-time presence over WebSockets: the optional part that needs Channels
(``pip install "whos-online[channels]"``). ``whos_online.realtime.routing`` routes the
ready consumer; here is what a site's own consumer needs: ``PresenceMixin``, or for
one that cannot inherit it, the connection's lifecycle and ``socket_language``.
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
