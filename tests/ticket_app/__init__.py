"""A stand-in for a third-party app whose base template ships in its package (a ticket
tracker shaped like django-helpdesk): docs/howto/third-party-templates.md is tested on it."""
