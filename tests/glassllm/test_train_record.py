"""scripts/train_demo.py's training record: step 0 is the run's own initial weights,
measured as an independent computation measures them; the snapshots sit at the promised
steps; a run killed between two snapshots and resumed writes the same record as one never
stopped; and "formed" is the lesson's rule for every head."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from glassllm import GlassLM, lessons, probes
from glassllm.__main__ import _blas_threads
from glassllm.batches import read_tokenizer
from glassllm.train import STATE_NAME, TrainOptions, initial_model
from tests.glassllm.test_train_subwords import (MERGES, TEXT, demo_script,  # noqa: F401
                                                handmade_tokenizer, nll_by_hand)

PHASES = [[6, {"span_copy(20, [3, 6], 4)": 0.7, "chains(20)": 0.3}],
          [16, {"english": 0.4, "twice([3, 8], 6)": 0.2, "names_story": 0.2,
                "span_copy(268, [3, 10], 4)": 0.2}]]
STEPS = 22
EVERY = 5


class Stop(Exception):
    pass


def args(out: Path, tok, text_file, *more: str) -> list[str]:
    return ["--out", str(out), "--tokenizer", str(tok.path), "--text", str(text_file),
            "--phases", json.dumps(PHASES), "--d-model", "32", "--d-ff", "64", "--context",
            "320", "--batch", "2", "--warmup", "5", "--snapshot-every", "10",
            "--record-every", str(EVERY), *more]


def read_record(out: Path) -> dict:
    return json.loads((out / "training_record.json").read_text())


def attention_file(out: Path) -> dict:
    from safetensors.numpy import load
    return load((out / "training_record.safetensors").read_bytes())


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return read_tokenizer(handmade_tokenizer(tmp_path_factory.mktemp("tok"), MERGES))


@pytest.fixture(scope="module")
def text_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def straight(demo_script, tok, text_file, tmp_path_factory):
    """A run never stopped (the tests only read it)."""
    out = tmp_path_factory.mktemp("runs") / "straight"
    assert demo_script.main(args(out, tok, text_file)) == 0
    return out


def test_step_0_is_the_initial_weights_measured_independently(demo_script, tok,
                                                              straight, tmp_path):
    record = read_record(straight)
    first = record["snapshots"][0]
    assert first["step"] == 0 and first["phase"] == 0
    # the run's initial weights, rebuilt from its options alone, with its tokenizer
    state = json.loads((straight / STATE_NAME).read_text())
    initial_model(TrainOptions(**state["options"])).save_pretrained(tmp_path / "init")
    (tmp_path / "init" / "tokenizer.json").write_bytes(tok.text)
    model = GlassLM.from_pretrained(tmp_path / "init")
    english, stories = demo_script.read_heldout()
    t = tok.tokenizer
    newline = t.encode("\n")
    sentences = [t.encode(line) for line in english]
    # English written twice: each copy's loss after its first token, and the attention of
    # every head from a second-copy token to the token after it in the first copy
    first_nll, second_nll, copy_attention = [], [], []
    for a in sentences:
        m = len(a)
        nll = nll_by_hand(model, a + newline + a)
        first_nll += list(nll[:m - 1])
        second_nll += list(nll[m + 1:2 * m])
        weights = probes.attention_weights(model, (a + newline + a)[:-1])
        copy_attention += [weights[:, :, m + 1 + j, j + 1] for j in range(m - 1)]
    assert first["copy_ratio"] == pytest.approx(np.mean(second_nll) / np.mean(first_nll),
                                                rel=1e-5)
    assert first["english_twice"]["ratio"] == first["copy_ratio"]
    np.testing.assert_allclose(first["induction_scores"], np.mean(copy_attention, axis=0),
                               atol=1e-4)
    # previous-token scores: each sentence's own, pooled by the positions it has
    per = [(probes.previous_token_scores(model, a), len(a) - 1) for a in sentences]
    pooled = sum(s * n for s, n in per) / sum(n for _, n in per)
    np.testing.assert_allclose(first["previous_token_scores"], pooled, atol=1e-4)
    assert first["heldout_loss"] == pytest.approx(
        probes.heldout_loss(model, "\n".join(english).encode(), model.config.max_len), rel=1e-6)
    # everything else as the report's own measure gives it for those weights, at the run's one
    # BLAS thread (OpenBLAS's sums can round differently with two: seen on an AMD EPYC)
    with _blas_threads(1):
        measured = demo_script.measure(model, english, stories)
    assert first["names"]["ratio"] == measured["names"]["ratio"]
    assert first["random_twice"]["ratio"] == measured["random_twice"]["ratio"]
    assert first["train_loss"] == state["losses"][0]  # the first batch, on the initial weights
    # the attention frames: every head's on the probe, the featured heads' in the JSON
    frames = attention_file(straight)
    probe = record["probe"]["tokens"]
    shortest = min(english, key=lambda line: (len(t.encode(line)), line))
    assert probe == t.encode(shortest + "\n" + shortest)
    weights = probes.attention_weights(model, probe).astype(np.float16)
    np.testing.assert_array_equal(frames["step-0000000"], weights)
    head = record["featured"]["induction"]
    np.testing.assert_allclose(first["attention"]["induction"],
                               weights[head["layer"], head["head"]], atol=6e-4)


def test_the_snapshots_sit_every_few_steps_with_the_runs_losses(demo_script, straight):
    record = read_record(straight)
    steps = [s["step"] for s in record["snapshots"]]
    assert steps == [0, 5, 10, 15, 20, 22] and record["every"] == EVERY
    state = json.loads((straight / STATE_NAME).read_text())
    losses = state["losses"]
    for before, s in zip(steps, steps[1:]):
        snap = record["snapshots"][steps.index(s)]
        assert snap["train_loss"] == pytest.approx(np.mean(losses[before:s]), rel=1e-12)
        assert snap["phase"] == (0 if s <= 6 else 1)  # the phase of the step's own batch
    assert sorted(attention_file(straight)) == [f"step-{s:07d}" for s in steps]
    # the featured heads: the last snapshot's best; formed by the lesson's rule
    last = record["snapshots"][-1]
    layer = last["english_twice"]["induction"]["layer"]
    assert record["featured"] == {
        "previous_token": {"layer": 0, "head": int(np.argmax(last["previous_token_scores"][0]))},
        "induction": {"layer": layer, "head": int(np.argmax(last["induction_scores"][layer]))}}
    for kind, key, at in (("previous_token", "previous_token_scores", 0),
                          ("induction", "induction_scores", layer)):
        for head, formed in enumerate(record["heads_formed_at"][kind]):
            series = [s[key][at][head] for s in record["snapshots"]]
            assert formed == lessons.formed_step(steps, series)
        assert record["formed_at"][kind] == \
            record["heads_formed_at"][kind][record["featured"][kind]["head"]]
    # the site's reader of the record reads it as the report names it, and agrees on when
    # every head formed
    from docs_build.data.training_record import load_training_record
    report = json.loads((straight / "report.json").read_text())
    site = load_training_record(str(straight), report)
    assert site.steps == steps and site.formed_at == record["formed_at"]
    assert site.heads_formed_at == record["heads_formed_at"]
    assert site.series("induction") == [s["induction_scores"][layer][
        record["featured"]["induction"]["head"]] for s in record["snapshots"]]
    # the report states it, with the seed and initialisation step 0 came from
    assert (report["training"]["seed"], report["training"]["init"]) == (0, "glass")
    assert report["record"]["formed_at"] == record["formed_at"]
    assert 0 < report["training"]["record_cpu_seconds"] < report["training"]["cpu_seconds"]
    md = (straight / "report.md").read_text()
    assert f"{len(steps)} snapshots, every {EVERY} steps" in md
    assert "When each head formed (" in md


def test_a_killed_run_resumes_to_the_same_record(demo_script, tok, text_file,
                                                 straight, tmp_path, monkeypatch):
    out = tmp_path / "killed"
    real_train = demo_script.train

    def killed_at_17(*a, on_progress, **k):
        def progress(p):
            on_progress(p)
            if p.step == 17:  # the record has 15 in memory, the folder only up to 10
                raise Stop
        return real_train(*a, on_progress=progress, **k)

    monkeypatch.setattr(demo_script, "train", killed_at_17)
    with pytest.raises(Stop):
        demo_script.main(args(out, tok, text_file))
    assert [s["step"] for s in read_record(out)["snapshots"]] == [0, 5, 10]
    monkeypatch.setattr(demo_script, "train", real_train)
    with pytest.raises(SystemExit, match="its snapshots are every 5 steps, not every 4"):
        demo_script.main(args(out, tok, text_file)[:-2] + ["--record-every", "4"])
    assert demo_script.main(args(out, tok, text_file)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["training"]["resumed_from"] == 10
    assert (out / "training_record.json").read_bytes() == \
        (straight / "training_record.json").read_bytes()
    assert (out / "training_record.safetensors").read_bytes() == \
        (straight / "training_record.safetensors").read_bytes()
    assert report["record"] == json.loads((straight / "report.json").read_text())["record"]


def test_a_folder_holding_a_run_without_its_record_is_refused(demo_script, tok, text_file,
                                                               straight, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(straight, out)
    (out / "training_record.json").unlink()
    with pytest.raises(SystemExit, match="holds a run without its training record"):
        demo_script.main(args(out, tok, text_file))


def test_formed_is_the_lessons_rule_for_every_head(demo_script):
    from docs_build.data.training_record import formed_step as site_formed_step
    steps = [0, 25, 50, 75, 100, 125]
    cases = [([0.1, 0.6, 0.3, 0.5, 0.8, 0.7], 75),     # dips below once, then stays
             ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], 0),      # at the threshold from the start
             ([0.1, 0.2, 0.9, 0.9, 0.9, 0.49], None),  # ends below: not formed
             ([0.0, 0.0, 0.0, 0.0, 0.0, 0.51], 125)]   # only the last
    for scores, expected in cases:
        history = [SimpleNamespace(step=s, induction=v, previous_token=v)
                   for s, v in zip(steps, scores)]
        assert lessons.formed_at(history, "induction") == expected
        assert lessons.formed_at(history, "previous_token") == expected
        assert site_formed_step(steps, scores, lessons.QUALIFIES) == expected
    # the record applies it to each head's own series, both kinds alike
    record = demo_script.TrainingRecord([], [], every=25, steps=125, phase_of=lambda s: 0,
                                        probe=[])
    for i, s in enumerate(steps):
        heads = [c[0][i] for c in cases]
        record.entries.append({"step": s, "previous_token_scores": [heads, heads[::-1]],
                               "induction_scores": [heads[::-1], heads],
                               "english_twice": {"induction": {"layer": 1}}})
    summary = record.summary()
    expected = [c[1] for c in cases]
    assert summary["heads_formed_at"] == {"previous_token": expected, "induction": expected}
    # the featured heads: the last snapshot's best (0.7 against 0.5, 0.49, 0.51)
    assert summary["featured"] == {"previous_token": {"layer": 0, "head": 0},
                                   "induction": {"layer": 1, "head": 0}}
    assert summary["formed_at"] == {"previous_token": 75, "induction": 75}


# -- glassllm.train's snapshot_files, which the record is written through -------------------

def test_snapshot_files_go_in_with_every_snapshot_and_bad_names_are_refused(tok, tmp_path):
    from dataclasses import replace

    from glassllm.batches import text_tokens
    from glassllm.train import train
    from tests.glassllm.test_train_subwords import TINY
    tokens = text_tokens(TEXT.encode(), tok)
    seen, models = [], []

    def files(step, model, losses):
        seen.append(step)
        assert len(losses) == step and model.encode("The cat") == tok.tokenizer.encode("The cat")
        return {"steps.json": json.dumps({"step": step, "losses": list(losses)}).encode()}

    run = train(tokens, tmp_path / "m", TINY, tokenizer=tok, snapshot_files=files,
                on_progress=lambda p: models.append(p.model.encode("a cat")))
    assert seen == [0, 4, 8, 10]  # step 0, every snapshot_every, the last
    assert json.loads((tmp_path / "m" / "steps.json").read_text()) == {
        "step": 10, "losses": run.losses}
    assert models == [tok.tokenizer.encode("a cat")] * 10  # Progress.model reads text
    for name in ("config.json", "sub/file.json", "../x.json"):
        with pytest.raises(ValueError, match="give names of files at the folder's top"):
            train(tokens, tmp_path / name.replace("/", "_"), replace(TINY, steps=1),
                  tokenizer=tok, snapshot_files=lambda step, model, losses: {name: b"{}"})
