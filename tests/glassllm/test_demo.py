"""The shipped demo checkpoint: a subword model whose induction heads copy English (issue 28).

Every figure of its report (``report.json``, written by ``scripts/train_demo.py``) is
measured again here with code of its own: glassllm's forward and tracer on the held-out texts
the report names, and the ``tokenizers`` package and Hugging Face's Llama as references for
the tokenizer and the logits. The targets the model meets are held as targets; the ones it
misses must be reported as missed, with the measured number.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, Config, GlassLM, load_tokenizer, probes
from glassllm.lessons import formed_step
from glassllm.nn import log_softmax
from glassllm.trace import Tracer
from tests.conftest import require_or_skip

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "scripts" / "heldout"
SHIPPED = ["config.json", "heldout.txt", "model.safetensors", "report.json", "report.md",
           "tokenizer.json", "tokenizer_config.json", "training_record.json",
           "training_record.safetensors"]
RANDOM_SEED, RANDOM_SEQUENCES, RANDOM_LENGTH = 20261206, 8, 24  # as the report draws them


@pytest.fixture(scope="module")
def model():
    return GlassLM.from_pretrained(DEMO_CHECKPOINT)


@pytest.fixture(scope="module")
def report():
    return json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def record():
    return json.loads((DEMO_CHECKPOINT / "training_record.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def english():
    return [line for line in (DEMO_CHECKPOINT / "heldout.txt").read_text(
        encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def stories():
    return json.loads((HELDOUT / "names.json").read_text(encoding="utf-8"))


def next_token_losses(model, tokens):
    """-log p(tokens[i+1] | tokens[:i+1]) for every i, and every head's attention."""
    trace = Tracer(steps="attn.softmax")
    logits = model.forward(tokens[:-1], trace)
    nll = -log_softmax(logits.astype(np.float64))[np.arange(len(tokens) - 1), tokens[1:]]
    attention = np.stack([trace.get("attn.softmax", layer=layer).value
                          for layer in range(model.config.n_layers)])  # (L, H, n-1, n-1)
    return nll, attention


def copy_ratio(model, items):
    """Each (a, between) read as a + between + a: pooled loss of the second copy's tokens
    after its first over the first copy's, and each head's mean attention from the second
    copy's a[j] to the first copy's a[j+1], the token to copy."""
    first, second, attention_on_target = [], [], []
    for a, between in items:
        m, k = len(a), len(between)
        nll, attention = next_token_losses(model, a + between + a)
        first.append(nll[:m - 1])
        second.append(nll[m + k:m + k + m - 1])
        j = np.arange(m - 1)
        attention_on_target.append(attention[:, :, m + k + j, j + 1])  # (L, H, m-1)
    ratio = np.concatenate(second).mean() / np.concatenate(first).mean()
    return ratio, np.concatenate(attention_on_target, axis=-1).mean(axis=-1)


def test_the_folder_holds_the_model_its_tokenizer_report_and_record(model, report):
    assert sorted(p.name for p in DEMO_CHECKPOINT.iterdir()) == SHIPPED
    c = model.config
    assert c.n_layers >= 2 and c.n_kv_heads < c.n_heads  # two blocks, grouped-query attention
    parameters = sum(w.size for w in model.state_dict().values())
    assert parameters <= 2_000_000 and parameters == report["measures"]["parameters"]
    weights = (DEMO_CHECKPOINT / "model.safetensors").stat().st_size
    assert weights <= 8_000_000 and weights == report["measures"]["weights_bytes"]
    assert model.tokenizer.vocab_size == c.vocab_size == 2048


def test_the_weights_are_kept_in_float16_as_the_report_says(report):
    from glassllm.files.safetensors_reader import SafetensorsFile  # NumPy alone (Pyodide too)
    # half the bytes of the site's download; glassllm widens them to float32 when it reads
    with SafetensorsFile(DEMO_CHECKPOINT / "model.safetensors") as stored:
        assert {info.dtype for info in stored.tensors.values()} == {"F16"}
    assert report["training"]["weights_dtype"] == "float16"
    assert "(float16: the trained float32 weights each rounded" in (
        DEMO_CHECKPOINT / "report.md").read_text(encoding="utf-8")


def test_the_tokenizer_gives_the_tokenizers_packages_ids(english, stories):
    try:
        from tokenizers import Tokenizer
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"tokenizers is needed: {error}", "GLASSLLM_REQUIRE_REFERENCE")
    reference = Tokenizer.from_file(str(DEMO_CHECKPOINT / "tokenizer.json"))
    ours = load_tokenizer(DEMO_CHECKPOINT)
    texts = english + [s["story"] for s in stories] + ["naïve café — 🙂  two  spaces\n\ttab"]
    for text in texts:
        ids = ours.encode(text)
        assert ids == reference.encode(text).ids, text
        assert ours.decode(ids) == text


def test_logits_equal_hugging_face_loading_the_same_folder(model, english):
    try:
        import torch
        from transformers import AutoTokenizer, LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch and transformers are needed: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    text = english[0] + "\n" + english[0]
    tokens = model.tokenizer.encode(text)
    assert AutoTokenizer.from_pretrained(DEMO_CHECKPOINT)(text)["input_ids"] == tokens
    twin = LlamaForCausalLM.from_pretrained(DEMO_CHECKPOINT).eval()
    with torch.no_grad():
        expected = twin(torch.tensor([tokens])).logits[0].numpy()
    np.testing.assert_allclose(model.forward(tokens), expected, atol=1e-4, rtol=0)


def test_english_written_twice_is_copied_by_a_layer_1_head(model, report, english):
    newline = model.tokenizer.encode("\n")
    ratio, on_target = copy_ratio(model, [(model.tokenizer.encode(s), newline)
                                          for s in english])
    measured = report["measures"]["english_twice"]
    assert ratio == pytest.approx(measured["ratio"], rel=1e-4)
    head = measured["induction"]
    assert on_target[1].max() == pytest.approx(head["score"], abs=1e-4)
    assert (head["layer"], head["head"]) == (1, int(np.argmax(on_target[1])))
    # issue 28's targets: the second copy at most half the first's loss, a layer-1 head with at
    # least 0.4 of its attention on the token to copy
    assert on_target[1].max() >= 0.4
    assert ratio <= 0.55  # the report says whether it is <= 0.5 (test_the_report_...)


def test_made_up_names_met_again_are_copied(model, report, stories):
    first, again = [], []
    for item in stories:
        tokens = model.tokenizer.encode(item["story"])
        name = model.tokenizer.encode(" " + item["name"])
        starts = [i for i in range(len(tokens)) if tokens[i:i + len(name)] == name]
        nll, _ = next_token_losses(model, tokens)
        for n, start in enumerate(starts):
            # the name's tokens after its first, predicted at positions start .. start+len-2
            (first if n == 0 else again).append(nll[start:start + len(name) - 1])
    ratio = np.concatenate(again).mean() / np.concatenate(first).mean()
    assert ratio == pytest.approx(report["measures"]["names"]["ratio"], rel=1e-4)
    assert ratio <= 0.5


def test_random_tokens_written_twice_are_measured_as_the_report_says(model, report):
    rng = np.random.default_rng(RANDOM_SEED)
    items = [([int(t) for t in rng.choice(model.config.vocab_size, RANDOM_LENGTH,
                                          replace=False)], []) for _ in range(RANDOM_SEQUENCES)]
    ratio, _ = copy_ratio(model, items)
    assert ratio == pytest.approx(report["measures"]["random_twice"]["ratio"], rel=1e-4)


def test_a_layer_0_head_attends_to_the_previous_token_of_english(model, report, english):
    total, count = 0.0, 0
    for s in english:
        ids = model.tokenizer.encode(s) + model.tokenizer.encode("\n")
        _, attention = next_token_losses(model, ids)
        i = np.arange(1, len(ids) - 1)
        total = total + attention[0][:, i, i - 1].sum(axis=-1)
        count += len(i)
    scores = total / count
    measured = report["measures"]["previous_token"]
    assert scores.max() == pytest.approx(measured["score"], abs=1e-4)
    assert int(np.argmax(scores)) == measured["head"] and scores.max() >= 0.5


def test_heldout_english_in_nats_per_byte_is_the_reports(model, report, english):
    text = "\n".join(english).encode("utf-8")
    value = probes.heldout_loss(model, text, model.config.max_len)
    assert value == pytest.approx(report["measures"]["heldout_english_nats_per_byte"], rel=1e-5)
    assert value < np.log(model.config.vocab_size)  # far below guessing a token uniformly


def test_the_report_marks_each_target_met_or_missed_by_its_number(report):
    for name, mark in report["criteria"].items():
        at_most = "<=" in name and ">=" not in name
        value, target = mark["value"], mark["target"]
        assert mark["met"] == (value <= target if at_most else value >= target), name
    text = (DEMO_CHECKPOINT / "report.md").read_text(encoding="utf-8")
    for name, mark in report["criteria"].items():
        assert f"| {name} |" in text and ("| yes |" if mark["met"] else "| no |") in text


def test_the_record_runs_from_the_initial_weights_to_the_shipped_ones(model, record):
    from glassllm.files.safetensors_reader import SafetensorsFile  # NumPy alone (Pyodide too)
    steps = [s["step"] for s in record["snapshots"]]
    assert steps[0] == 0 and max(np.diff(steps)) <= 25
    with SafetensorsFile(DEMO_CHECKPOINT / "training_record.safetensors") as stored:
        attention = {name: stored.read_float32(name) for name in stored.tensors}
    probe = record["probe"]["tokens"]
    initial = GlassLM(Config(**{**model.config.__dict__, "seed": 0}))  # --init glass, seed 0
    for weights, step in ((initial, steps[0]), (model, steps[-1])):
        np.testing.assert_allclose(attention[f"step-{step:07d}"],
                                   probes.attention_weights(weights, probe), atol=2e-3)


def test_each_head_forms_by_the_one_rule(record):
    steps = [s["step"] for s in record["snapshots"]]
    for kind, key in (("previous_token", "previous_token_scores"),
                      ("induction", "induction_scores")):
        head = record["featured"][kind]
        series = [s[key][head["layer"]][head["head"]] for s in record["snapshots"]]
        assert record["formed_at"][kind] == formed_step(steps, series)


def test_the_script_s_default_recipe_is_the_shipped_runs(report):
    from tests.conftest import load_script
    script = load_script("train_demo")
    assert report["phases"] == script.DEFAULT_PHASES  # so its command, without --phases, is true
    # and without --repeat: the sources it read more than once are the script's default
    times = {row["name"]: row.get("times", 1) for row in report["training"]["corpus"]}
    assert [f"{name}={k}" for name, k in times.items() if k > 1] == script.DEFAULT_REPEAT
    command = report["training"]["command"]
    assert command.startswith("python scripts/train_demo.py --out ")
    if "--phases" in command:  # a file of the default recipe, so the command is the default's
        named = command.split("--phases ")[1].split()[0]
        assert script.read_phases(str(ROOT / named)) == script.DEFAULT_PHASES
