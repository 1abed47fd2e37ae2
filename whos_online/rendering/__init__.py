"""The block as people see it: rendered once for the template tags, the JSON endpoint,
the Jinja2 globals and the hub's pushes, kept per process for a moment, and announced to
screen readers when it changes."""
