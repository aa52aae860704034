"""Everything the site shows of the engine, in one call: ``load_example`` asks the engine's
child (``engine/load.py``: from memory, the disk cache or a new run) and turns its answer into
the catalog, the example run, the head study and the replay's recordings."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..engine import runner
from ..engine.load import EngineRun, load_engine
from ..engine.schema import ReplayFile
from ..engine.settings import ExampleSettings
from ..text.tokens import TokenLabels
from .catalog import StepCatalog
from .heads import HeadStudy, HeldOut, featured_heads
from .run import ExampleRun, index_snapshots
from .training_record import load_training_record

_BUILT: list = []  # [(engine output, ExampleData)]: the newest, as load_engine remembers it


@dataclass
class ExampleData:
    """What ``load_example`` gives: all the site reads of the engine."""

    catalog: StepCatalog
    run: ExampleRun
    study: HeadStudy
    replay: list[tuple[ReplayFile, bytes]]  # in the order the replay page offers them
    source: str  # "child", "memory" or "disk": where this build got it
    seconds: float = 0.0  # the child's wall time, when this build ran it


def held_out(loss, heldout: str | None) -> HeldOut | None:
    """The child's measure of the held-out text ``heldout``."""
    if loss is None:
        return None
    return HeldOut(source=Path(heldout), n_bytes=loss.n_bytes, window=loss.window,
                   loss=loss.loss, untrained_loss=loss.untrained_loss, n_tokens=loss.n_tokens)


def load_example(settings: ExampleSettings, package_dir: Path, *, allow_stale: bool = False,
                 timeout: float = runner.DEFAULT_TIMEOUT,
                 timeout_option: str = runner.TIMEOUT_OPTION, report=None) -> ExampleData:
    """The catalog, the example run, the head study and the replay's recordings of the engine
    in ``package_dir`` with ``settings`` (``engine.load.load_engine`` says how and raises
    what). An answer the engine's memory reuses gives the same objects as before."""
    answer = load_engine(settings, package_dir, allow_stale=allow_stale, timeout=timeout,
                         timeout_option=timeout_option, report=report)
    if _BUILT and _BUILT[0][0] is answer.output:
        return replace(_BUILT[0][1], source=answer.source, seconds=answer.seconds)
    data = example_data(answer, settings, Path(package_dir).resolve())
    _BUILT[:] = [(answer.output, data)]
    return data


def example_data(answer: EngineRun, settings: ExampleSettings, package_dir: Path) -> ExampleData:
    """The engine's answer as the objects the pages read."""
    output = answer.output
    catalog = StepCatalog(steps=output.catalog.steps, package_dir=package_dir,
                          stale_index=output.catalog.stale_index)
    runs, weights = output.runs, output.weights
    run = ExampleRun(settings=settings, config=output.config,
                     labels=TokenLabels(output.token_labels, output.token_bytes),
                     tokenization=output.tokenization, prompt_tokens=runs.prompt_tokens,
                     generation=runs.generation, loss_tokens=runs.loss_tokens,
                     loss_targets=runs.loss_targets, loss=runs.loss, loss_trace=runs.loss_trace,
                     seconds=runs.seconds, model=weights,
                     untrained_next_probs=output.untrained.next_probs,
                     untrained_embed_tokens=output.untrained.embed_tokens,
                     cache_check=output.cache_check, training=output.training)
    index_snapshots(run, catalog)
    measured = output.measures
    heldout = held_out(measured.heldout, answer.request.heldout)
    study = HeadStudy(report=measured.report, untrained=measured.untrained,
                      length=measured.length, probe_tokens=measured.probe_tokens,
                      probe_trace=measured.probe_trace,
                      untrained_probe_trace=measured.untrained_probe_trace,
                      featured=featured_heads(measured.report), heldout=heldout,
                      card=answer.request.card, untrained_loss=measured.untrained_loss,
                      record=load_training_record(settings.checkpoint, answer.request.card),
                      circuit=output.circuits)
    return ExampleData(catalog=catalog, run=run, study=study, replay=answer.replay,
                       source=answer.source, seconds=answer.seconds)
