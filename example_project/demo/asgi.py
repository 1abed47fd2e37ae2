"""The demo's ASGI application: Django for HTTP, whos_online's consumer for WebSockets.

``manage.py demo`` (and ``runserver``) serve it with Daphne, which is first in
INSTALLED_APPS for that reason.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo.settings")
django_asgi = get_asgi_application()  # sets Django up before the routes import models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from demo.consumers import ChatConsumer  # noqa: E402
from whos_online.contrib.channels.routing import websocket_urlpatterns  # noqa: E402

routes = [*websocket_urlpatterns, path("ws/chat/<path:room>/", ChatConsumer.as_asgi())]
# The origin check: another site's page must not open a socket with our visitor's cookies.
application = ProtocolTypeRouter(
    {
        "http": django_asgi,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(routes))),
    }
)
