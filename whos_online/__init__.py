"""Who's online for Django, tracked in Redis sorted sets."""

__version__ = "0.1.0"
