"""Recordings: a traced run saved to a file, for the slow-motion replay page to play back.

A recording holds every snapshot of a run in the order the tracer took it. Two kinds exist:

- ``"generation"``: a prompt and ``n`` generated tokens; each generation step is one
  forward pass plus ``probs`` and ``sample``, so ``18*L + 5`` events per token, tagged with
  the step's index ``gen``. ``"cache": true`` (``record_generation``'s default, as
  ``GlassLM.generate`` runs): the first step's pass is over the prompt, and every later
  step's computes only the newest position against the KV cache, so its token and query
  axes have length 1 and its key axis holds every position so far (``attn.scores``,
  ``attn.mask``, ``attn.softmax``: ``(H, 1, n)``, one key longer at each step).
  ``"cache": false`` (``record --no-cache``): every step recomputes the whole sequence
  so far. Files written before the field existed have none and read as ``false``, their
  shapes unchanged; any other value is refused. The readers derive every event's shape
  from the step table's axes and its pass (``events.generation_passes``), so a shape that
  contradicts the field is refused too.
- ``"loss"``: one traced ``GlassLM.loss`` call: ``18*L + 3`` forward events plus ``loss``
  and ``loss.grad``.
- ``"training"`` (``record_training``): one training step. First the ``18*L + 5`` events of
  the loss run (``GlassLM.gradients``' ``trace``), then the backward pass: ``18*L + 5``
  events marked ``"grad": true``, each ∂loss/∂value of a forward event — the same step,
  layer, head and shape — in the reverse order (``grad_trace``: gradient ``18*L + 5 + i`` is
  of forward event ``18*L + 4 - i``); ``order`` is the position in the gradient tracer.
  Then ``"update"``, the optimiser's step (AdamW): its settings (``lr``, ``beta1``,
  ``beta2``, ``eps``, ``step``), ``loss_after``, and for every parameter in ``state_dict()``
  order its ``weight_decay``, the norms of its gradient and of its change, and
  ``UPDATE_ENTRIES`` sampled weights (those of the largest |gradient|) with ``index``,
  ``before``, ``grad``, ``m``, ``v`` (the moments after the step) and ``after`` — plain
  JSON numbers (float32 values, exactly), a few KB where the whole weights would weigh as
  much as the model. Its steps table gives each step's backward rule too (``grad_latex``,
  ``grad_plain``, from ``glassllm.backward.GRADS``). The kind is new in both versions,
  whose numbers do not change: generation and loss recordings are written byte for byte as
  before and every older file still reads; a reader older than the kind refuses a training
  file by its ``kind``.

Two formats hold the same recording; ``write_recording`` picks one from the file's suffix
and the readers tell them apart by content:

- **Version 2, binary** (``.glrec``, ``BINARY_SUFFIX``): for real-size runs. The file is
  ``MAGIC`` (8 bytes), the version and the byte length of the index (two little-endian
  uint32), the index (UTF-8 JSON, ``"version": 2``), zero padding to a multiple of
  ``ALIGN`` bytes, then the arrays' raw little-endian bytes. The index holds everything
  but the arrays; each event gives ``dtype``, ``shape``, ``offset`` (from the start of the
  data, a multiple of ``ALIGN`` so a browser can view the bytes as a typed array without
  copying) and ``length``. Events' bytes come in event order without overlapping, so the
  values a file claims never exceed the bytes it holds. Arrays are float32 by default
  (the tracer's own values, exactly) or float16 on request (half the size; ±inf, NaN and
  -0 kept exactly; a finite value beyond float16's range, |x| > 65504, is refused rather
  than written as a misleading inf); the sampled token is int32. The replay page reads
  the index first and decodes an event only when it is shown.
- **Version 1, JSON** (``.json``): one JSON document whose arrays are
  ``{"shape": [...], "dtype": "float32", "data": <base64>}`` — the raw little-endian
  float32 bytes (int32 for the sampled token). Base64 keeps the values exact, with
  ``-inf``, ``+inf`` and ``NaN`` as their IEEE bit patterns (Python's ``json`` would write
  bare ``-Infinity``, which ``JSON.parse`` rejects); everything else is plain JSON written
  with ``allow_nan=False``. About 5.3 bytes per value, so only for small runs.

A run of a checkpoint with its own tokenizer (``record --model DIR``) also gives
``prompt``, ``generated`` and ``targets`` a ``"strings"`` list: how each token reads (byte
tokens need none).

Reading (``loads``, ``read_recording``, ``from_json``, ``from_binary``) checks the whole index against its
model's Config before decoding an array — each event's step, layer, head, generation step
and shape, and in version 2 each byte range against the file — and bounds sizes, nesting
and number length, so a file cannot make a reader allocate more than it holds. The
replay page's reader (``docs_build/assets/replay-format.js``) accepts exactly the same
files: both are tested on ``tests/fixtures/recordings``.

    rec = record_generation(GlassLM(cfg), encode("Hello"), 6, seed=0)
    write_recording(rec, "run.glrec")                    # or dtype="float16", or "run.json"
    again = read_recording("run.glrec")  # ValueError with a hint if it is not a recording

The package, one job per module: ``events`` (what a recording holds, from
``glassllm.steps.STEP_FACTS``), ``capture`` (recording a run), ``arrays`` (one array as
stored), ``document`` (the part both versions share, and its checks), ``json_v1`` and
``binary_v2`` (the two versions), ``files`` (reading and writing files), ``size`` (the
size of a run's recording before it runs). JSON is parsed after ``glassllm.safe_json`` has
bounded it.
"""

from .arrays import BINARY_DTYPES, FLOAT16_MAX, FLOAT_DTYPES, MAX_AXES, decode_array, encode_array
from .binary_v2 import ALIGN, HEADER_BYTES, MAGIC, binary_parts, from_binary
from .capture import record_generation, record_loss, record_training, update_section
from .document import FORMAT, JSON_VERSION, MAX_DEPTH, MAX_NUMBER_CHARS, MAX_SIZE, VERSION
from .events import (AXES, KIND_STEPS, KINDS, RECORDING_KINDS, UPDATE_ENTRIES, Event, Recording,
                     expected_shape)
from .files import (BINARY_SUFFIX, JSON_SUFFIX, loads, read_recording, recording_format,
                    write_recording)
from .json_v1 import dumps, from_json, to_json
from .size import estimate_size

__all__ = [
    "ALIGN", "AXES", "BINARY_DTYPES", "BINARY_SUFFIX", "FLOAT16_MAX", "FLOAT_DTYPES", "FORMAT",
    "HEADER_BYTES", "JSON_SUFFIX", "JSON_VERSION", "KINDS", "KIND_STEPS", "MAGIC", "MAX_AXES",
    "MAX_DEPTH", "MAX_NUMBER_CHARS", "MAX_SIZE", "RECORDING_KINDS", "UPDATE_ENTRIES", "VERSION",
    "Event", "Recording",
    "binary_parts", "decode_array", "dumps", "encode_array", "estimate_size",
    "expected_shape", "from_binary", "from_json", "loads", "read_recording",
    "record_generation", "record_loss", "record_training", "recording_format", "to_json", "update_section", "write_recording",
]
