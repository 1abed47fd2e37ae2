"""A small site that shows whos_online at work: three pages, a login and a visitor simulator."""
