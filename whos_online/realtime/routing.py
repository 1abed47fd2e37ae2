"""WebSocket routes for ``WhosOnlineConsumer``; add them to the site's ASGI application::

    from whos_online.realtime.routing import websocket_urlpatterns
    application = ProtocolTypeRouter({
        "http": get_asgi_application(),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    })

and set ``WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"`` so the live block subscribes.
The site and rooms are served only as ``WHOS_ONLINE_ACCESS`` allows (``whos_online.access``).
"""

from django.urls import path

from whos_online.realtime.consumers import WhosOnlineConsumer

# django-stubs types path() for views; channels' URLRouter takes ASGI applications.
websocket_urlpatterns = [
    path("ws/whos-online/", WhosOnlineConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/whos-online/<path:room>/", WhosOnlineConsumer.as_asgi()),  # type: ignore[arg-type]
]
