"""The Redis store: every call whos_online makes to Redis goes through this package.

``connection`` makes the client and ``failsafe`` guards calls made inside someone
else's request; ``scripts`` runs the Lua in ``lua/``; ``recording``, ``reading``,
``stats`` and ``sockets`` are what the rest of the app asks of Redis.
"""
