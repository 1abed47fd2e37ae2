"""The request side: who is behind a request (a member, a guest known by a keyed hash of
their address, or a bot) and recording them through the store."""
