"""The map of the model on a page: boxes linked to this language's step pages, the example's
shapes, and the hand-written pages' ``<!-- glassllm:model-map -->`` lines filled with it."""

from __future__ import annotations

import re

from ..data.catalog import StepCatalog
from ..data.run import ExampleRun
from ..data.shapes import step_shapes
from ..html import model_map
from ..text.languages import Language
from .stash import Stash
from .urls import Links, step_page_uri


def model_map_html(catalog: StepCatalog, run: ExampleRun, labels: dict[str, str],
                   ui: dict[str, str], lang: Language, links: Links, page_uri: str,
                   current: str | None = None, small: bool = False,
                   kv_cache: bool = False) -> str:
    """The map of the model (``model_map``) for the page ``page_uri``: shapes of the example
    run, boxes linked to this language's step pages; ``current`` marks one step's box;
    ``kv_cache`` draws the K/V cache box that the replay fills."""
    n = len(run.traced_tokens)
    shapes = step_shapes(catalog.steps, run.config, n, len(run.loss_tokens))
    strings = model_map.map_strings(ui, run.config, n)
    return model_map.model_map_html(
        catalog.steps, shapes, labels,
        lambda step_id: links.rel(page_uri, step_page_uri(step_id, lang)),
        strings, current=current, small=small, kv_cache=kv_cache)


# A line of a hand-written page that the plugin replaces by the map ("small": the thumbnail;
# "cache": with the K/V cache box, which the replay page's player fills as it plays).
MAP_MARKER = re.compile(r"^<!-- glassllm:model-map( small)?( cache)? -->[ \t]*$", re.M)


def fill_map_markers(markdown: str, page_uri: str, catalog: StepCatalog, run: ExampleRun,
                     labels: dict[str, str], ui: dict[str, str], lang: Language, links: Links,
                     stash: Stash) -> str:
    """``markdown`` with each ``<!-- glassllm:model-map -->`` line replaced by the map (its
    HTML goes to ``stash``); a page without the marker comes back unchanged."""
    def put(match: re.Match) -> str:
        return stash.put(model_map_html(catalog, run, labels, ui, lang, links, page_uri,
                                        small=bool(match.group(1)),
                                        kv_cache=bool(match.group(2))))
    return MAP_MARKER.sub(put, markdown)
