"""Write an exploration once; get a live widget in JupyterLab and a kernel-free page on the site.

:func:`explore` takes a function that draws one matplotlib figure for one choice of each
control, renders every combination of the (few) choices once, and displays a single
output that carries two representations:

* ``application/vnd.jupyter.widget-view+json``: ipywidgets controls, live in JupyterLab;
* ``text/html``: the same controls as plain HTML radio buttons that swap pre-rendered
  images with a few lines of inline JavaScript. No kernel, no CDN.

JupyterLab shows the richest one (the widget); the site is configured to drop the widget
view (``nb_mime_priority_overrides`` in ``_config.yml``), so readers get the fallback.
"""

from __future__ import annotations

import base64
import html
import json
import uuid
from itertools import product

import ipywidgets as widgets
from IPython.display import Image, display

from ._checks import non_empty
from .environment import is_claims_only, is_static_build
from .plots import shown_size, to_png

MAX_FRAMES = 60


def _key(values) -> str:
    return "|".join(str(v) for v in values)


def render_frames(draw, controls: dict) -> dict[str, bytes]:
    """PNG bytes of ``draw(**choice)`` for every combination of ``controls``, keyed by
    ``"|".join(values)``. When only the claims are checked
    (:func:`helpers.environment.is_claims_only`), only the first combination is drawn."""
    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    if not controls:
        raise ValueError("explore needs at least one control, e.g. depth=[8, 20, 56]")
    names = list(controls)
    options = [non_empty(name, controls[name]) for name in names]
    combos = list(product(*options))
    if len(combos) > MAX_FRAMES:
        raise ValueError(f"controls give {len(combos)} combinations; at most {MAX_FRAMES} can be pre-rendered")
    if is_claims_only():
        combos = combos[:1]
    return {_key(c): to_png(draw(**dict(zip(names, c)))) for c in combos}


def label(name: str) -> str:
    """A control's label for a reader: ``"branch scale"`` for the keyword ``branch_scale``."""
    return name.replace("_", " ")


def describe_choice(names, key: str) -> str:
    """Words for one combination, for alt text: ``"depth 8, norm none"`` for key ``"8|none"``."""
    return ", ".join(f"{label(name)} {value}" for name, value in zip(names, key.split("|")))


def static_html(controls: dict, frames: dict[str, bytes], *, alt: str) -> str:
    """Radio-button controls and an image, switched by inline JavaScript (no kernel needed)."""
    uid = "explore-" + uuid.uuid4().hex[:8]
    names = list(controls)
    fieldsets = []
    for i, name in enumerate(names):
        buttons = "".join(
            f'<label><input type="radio" name="{uid}-{i}" value="{html.escape(str(v))}"'
            f'{" checked" if j == 0 else ""}> {html.escape(str(v))}</label> '
            for j, v in enumerate(controls[name])
        )
        fieldsets.append(f"<fieldset><legend>{html.escape(label(name))}</legend>{buttons}</fieldset>")
    first = next(iter(frames))
    width = shown_size(frames[first])[0]
    sources = {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in frames.items()}
    alts = {k: f"{alt} ({describe_choice(names, k)})" for k in frames}
    later = {k: v for k, v in sources.items() if k != first}  # the first frame is the image's own src
    return f"""<div class="course-explorer" id="{uid}">
<form class="course-explorer-controls">{"".join(fieldsets)}</form>
<img class="course-explorer-image" src="{sources[first]}" width="{width}" alt="{html.escape(alts[first])}">
<p class="course-explorer-note">Static version: every combination was computed when the page was
built. Run the notebook in JupyterLab for the live widget.</p>
<script>
(function () {{
  const root = document.getElementById("{uid}");
  const img = root.querySelector("img");
  const frames = {json.dumps(later)};
  frames[{json.dumps(first)}] = img.getAttribute("src");
  const alts = {json.dumps(alts)};
  root.querySelector("form").addEventListener("change", function () {{
    const key = Array.from(root.querySelectorAll("fieldset")).map(function (fs) {{
      return fs.querySelector("input:checked").value;
    }}).join("|");
    img.src = frames[key];
    img.alt = alts[key];
  }});
}})();
</script>
</div>"""


def live_widget(controls: dict, frames: dict[str, bytes]) -> widgets.Widget:
    """ipywidgets controls (toggle buttons) that show the frame of the chosen combination."""
    names = list(controls)
    buttons = {
        name: widgets.ToggleButtons(options=list(controls[name]), description=label(name),
                                    style={"description_width": "initial"})
        for name in names
    }
    def show(**choice):
        data = frames[_key(choice[n] for n in names)]
        display(Image(data=data, width=shown_size(data)[0]))

    # interactive_output calls show with each control's value as a keyword.
    out = widgets.interactive_output(show, buttons)
    return widgets.VBox([*buttons.values(), out])


def explore(draw, *, alt: str, **controls) -> None:
    """Display an exploration of ``draw`` over ``controls`` (each: a list of options).

    ``draw(**choice)`` returns a matplotlib figure for one combination. ``alt`` describes
    the figure for screen readers (the chosen values are appended). Example::

        explore(lambda depth, kind: plot_for(depth, kind), alt="...",
                depth=[8, 20, 56], kind=["plain", "residual"])
    """
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("alt must be a non-empty description of the figure")
    frames = render_frames(draw, controls)
    page = static_html(controls, frames, alt=alt)
    if is_static_build():
        # Executed for the site or the seed sweep: the kernel-free page is all that is kept, and
        # no widget is made. (nbclient can hang, now and then, on a cell that opens widget comms
        # and displays into an Output widget: jupyter/nbclient#312.)
        display({"text/html": page, "text/plain": f"[exploration: {alt}]"}, raw=True)
        return
    bundle = live_widget(controls, frames)._repr_mimebundle_()
    bundle["text/html"] = page
    display(bundle, raw=True)
