"""Live blocks over WebSockets: the optional part that needs Channels
(``pip install "whos-online[channels]"``, ``"whos_online.contrib.channels"`` in
``INSTALLED_APPS``). ``routing`` routes the ready consumer; ``consumers.PresenceMixin``
records the member of a site's own consumer. Built on the core's seam,
:mod:`whos_online.push`.
"""

try:
    import channels  # noqa: F401
except ImportError as error:
    raise ImportError(
        'whos_online.contrib.channels needs Channels: pip install "whos-online[channels]"'
    ) from error
