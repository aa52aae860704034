"""`python -m glassllm record TEXT --model DIR`: a Hugging Face Llama folder made here (a random
LlamaForCausalLM saved by save_pretrained, a tokenizer trained and saved by `tokenizers`),
encoded with its tokenizer.json when it has one, with logits equal to Hugging Face's."""

import json

import numpy as np
import pytest

from glassllm import encode
from glassllm.__main__ import main
from glassllm.recording import read_recording
from tests.conftest import require_or_skip

try:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

pytestmark = pytest.mark.reference

TEXT = "the cat sat on the mat, café"


@pytest.fixture(autouse=True)
def reference_available():
    require_or_skip(torch is not None,
                    f"torch, transformers and tokenizers are needed to make Hugging Face "
                    f"folders: {IMPORT_ERROR if torch is None else ''}",
                    "GLASSLLM_REQUIRE_REFERENCE")


def save_llama(folder, vocab_size, seed=0):
    torch.manual_seed(seed)
    twin = LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
        rms_norm_eps=1e-5, tie_word_embeddings=False)).eval()
    twin.save_pretrained(folder)
    return twin


def save_tokenizer(folder, vocab_size):
    """A byte-level BPE with a BOS token the post-processor adds, as Llama's tokenizers do."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(["the cat sat on the mat", "a cat and a hat"] * 20, trainer)
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                             special_tokens=[("<s>", 0)])
    tokenizer.save(str(folder / "tokenizer.json"))
    return tokenizer


@pytest.fixture(scope="module")
def llama_with_tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-bpe")
    twin = save_llama(folder, vocab_size=300)
    return folder, twin, save_tokenizer(folder, vocab_size=290)


@pytest.fixture(scope="module")
def byte_llama(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-bytes")
    return folder, save_llama(folder, vocab_size=256, seed=1)


def hf_logits(twin, tokens):
    with torch.no_grad():
        return twin(torch.tensor([tokens])).logits[0].numpy()


def test_a_folder_with_a_tokenizer_is_encoded_with_it(llama_with_tokenizer, tmp_path, capsys):
    folder, twin, tokenizer = llama_with_tokenizer
    out = tmp_path / "run.json"
    assert main(["record", TEXT, "--model", str(folder), "--tokens", "3", "--greedy",
                 "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    prompt = tokenizer.encode(TEXT).ids
    assert prompt[0] == 0 and len(prompt) < len(TEXT.encode())  # BOS, then merged tokens
    rec = read_recording(out)  # the recording reader accepts it
    assert rec.prompt == prompt and rec.config["vocab_size"] == 300
    # logits of the first pass equal Hugging Face's on the same files
    logits = next(e.value for e in rec.events if e.step == "logits" and e.gen == 0)
    np.testing.assert_allclose(logits, hf_logits(twin, prompt), atol=1e-4, rtol=0)
    # greedy generation picks Hugging Face's argmax, pass after pass
    sequence = list(prompt)
    for token in rec.generated:
        assert token == int(hf_logits(twin, sequence)[-1].argmax())
        sequence.append(token)
    doc = json.loads(out.read_text(encoding="utf-8"))
    strings = [tokenizer.decode([t], skip_special_tokens=False) for t in prompt]
    assert doc["prompt"]["strings"] == strings and strings[0] == "<s>"
    assert doc["prompt"]["text"] == tokenizer.decode(prompt, skip_special_tokens=False)
    assert doc["generated"]["strings"] == [tokenizer.decode([t], skip_special_tokens=False)
                                           for t in rec.generated]


def test_a_loss_recording_with_a_tokenizer_shows_the_targets_too(llama_with_tokenizer,
                                                                  tmp_path):
    folder, twin, tokenizer = llama_with_tokenizer
    out = tmp_path / "loss.json"
    assert main(["record", TEXT, "--model", str(folder), "--loss", "--out", str(out)]) == 0
    ids = tokenizer.encode(TEXT).ids
    rec = read_recording(out)
    assert rec.prompt == ids[:-1] and rec.targets == ids[1:]
    expected = torch.nn.functional.cross_entropy(
        torch.from_numpy(hf_logits(twin, ids[:-1])), torch.tensor(ids[1:])).item()
    assert rec.loss == pytest.approx(expected, abs=1e-4)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["targets"]["strings"]) == len(ids) - 1


def test_a_folder_without_a_tokenizer_reads_bytes(byte_llama, tmp_path):
    folder, twin = byte_llama
    out = tmp_path / "run.json"
    assert main(["record", TEXT, "--model", str(folder), "--tokens", "2", "--out",
                 str(out)]) == 0
    rec = read_recording(out)
    assert rec.prompt == encode(TEXT)
    # a cached step's one row of logits: Hugging Face's last row over the whole sequence
    logits = next(e.value for e in rec.events if e.step == "logits" and e.gen == 1)
    assert logits.shape == (1, 256)
    np.testing.assert_allclose(logits, hf_logits(twin, rec.prompt + rec.generated[:1])[-1:],
                               atol=1e-4, rtol=0)
    assert "strings" not in json.loads(out.read_text(encoding="utf-8"))["prompt"]


def refused(args, capsys, out):
    with pytest.raises(SystemExit) as exit_info:
        main(["record", TEXT, *args, "--out", str(out)])
    assert exit_info.value.code == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_without_a_tokenizer_a_vocabulary_that_is_not_bytes_is_refused(
        llama_with_tokenizer, tmp_path, capsys):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    source = llama_with_tokenizer[0]
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((source / name).read_bytes())
    err = refused(["--model", str(folder)], capsys, tmp_path / "run.json")
    assert "has no tokenizer.json" in err and "300 tokens" in err


@pytest.mark.parametrize("args, message", [
    (["--d-model", "64"], "--d-model sets the size of a random model"),
    (["--layers", "2", "--seed", "1"], "--layers, --seed set the size of a random model"),
    (["--top-k", "301"], "--top-k must be at most 300 (the model's vocabulary)"),
    (["--tokens", "40"], "the model reads at most 48"),
])
def test_contradictions_with_the_folder_are_refused(args, message, llama_with_tokenizer,
                                                    tmp_path, capsys):
    err = refused(["--model", str(llama_with_tokenizer[0]), *args], capsys,
                  tmp_path / "run.json")
    assert message in err


def test_folders_that_are_not_models_are_refused(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert "is not a folder" in refused(["--model", str(tmp_path / "nope")], capsys, out)
    bad = tmp_path / "mistral"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["MistralForCausalLM"]}))
    assert "architectures" in refused(["--model", str(bad)], capsys, out)
    (bad / "config.json").write_text("{")
    assert "is not valid JSON" in refused(["--model", str(bad)], capsys, out)


def test_a_broken_tokenizer_file_is_refused(byte_llama, tmp_path, capsys):
    folder = tmp_path / "broken"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((byte_llama[0] / name).read_bytes())
    (folder / "tokenizer.json").write_text("{}")
    err = refused(["--model", str(folder)], capsys, tmp_path / "run.json")
    assert "tokenizer.json is not a tokenizer file" in err
