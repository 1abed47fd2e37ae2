"""The language a socket is pushed in: the one its page was rendered in.

Channels has no ``LocaleMiddleware``, so ``live.js`` sends the block's language
(``data-whos-online-lang``) in the socket's URL (``?lang=de``); without it the
handshake is resolved as ``LocaleMiddleware`` resolves a request. The answer is one
of ``settings.LANGUAGES``, so a hub renders a view in a handful of languages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from django.http import HttpRequest, parse_cookie
from django.utils.translation import get_language_from_request, get_supported_language_variant

# The socket URL's parameter live.js fills from the block's data-whos-online-lang.
LANGUAGE_PARAMETER = "lang"


def socket_language(scope: dict[str, Any]) -> str:
    """The language of the page that opened this socket, one of ``settings.LANGUAGES``.

    An unknown, malformed or repeated ``lang`` parameter is ignored, as Django
    ignores such a cookie or header.
    """
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    asked = query.get(LANGUAGE_PARAMETER, [])
    if len(asked) == 1:
        try:
            return get_supported_language_variant(asked[0])
        except LookupError:
            pass
    # The handshake's headers, as LocaleMiddleware reads a request's (public APIs only).
    request = HttpRequest()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            request.COOKIES = parse_cookie(value.decode("latin-1"))
        elif name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return get_language_from_request(request)
