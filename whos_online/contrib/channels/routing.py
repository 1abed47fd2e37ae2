"""WebSocket routes for ``WhosOnlineConsumer``: the site's ASGI application routes them
(docs/howto/live.md shows how) behind ``AuthMiddlewareStack``, and
``WHOS_ONLINE_WEBSOCKET_URL`` names where, so the live block subscribes."""

from django.urls import path

from whos_online.contrib.channels.consumers import WhosOnlineConsumer

# django-stubs types path() for views; channels' URLRouter takes ASGI applications.
websocket_urlpatterns = [
    path("ws/whos-online/", WhosOnlineConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/whos-online/<path:room>/", WhosOnlineConsumer.as_asgi()),  # type: ignore[arg-type]
]
