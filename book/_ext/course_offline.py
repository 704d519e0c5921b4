"""Sphinx extension: keep the site free of CDN scripts.

Jupyter Book always loads sphinx-thebe, which writes an inline script naming thebe's CDN
URL into every page (twice, in this version, which the browser reports as an error).
This course does not use thebe (its explorations have kernel-free fallbacks), so the
extension disconnects the handler that adds those scripts.
"""


def setup(app):
    for event, listeners in app.events.listeners.items():
        app.events.listeners[event] = [
            listener for listener in listeners
            if not (getattr(listener.handler, "__module__", "") == "sphinx_thebe"
                    and listener.handler.__name__ == "init_thebe_core")
        ]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
