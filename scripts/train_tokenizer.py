"""Train the demo's 2,048-token byte-level BPE on its English corpus and write tokenizer.json.

    python scripts/train_tokenizer.py --out path/to/folder    # writes folder/tokenizer.json

The corpus is ``scripts/demo_corpus.py``'s (WordNet 3.0's example sentences and definitions,
Jane Austen's novels), one sentence or paragraph per line. The tokenizer is GPT-2's design as
the ``tokenizers`` package trains it: the ``ByteLevel`` pre-tokenizer (GPT-2's word pattern, no
prefix space) and decoder, a BPE model whose first 256 symbols are the 256 byte characters, so
every text is encodable. ``glassllm.load_tokenizer`` reads the file in pure Python, with the
same IDs as ``tokenizers``. Training is deterministic: the same corpus gives the same file
(one thread; the trainer's ties are broken by the pairs' order).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterable

VOCAB_SIZE = 2048


def train(lines: Iterable[str], vocab_size: int = VOCAB_SIZE) -> str:
    """The JSON text of a byte-level BPE of ``vocab_size`` tokens trained on ``lines``."""
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before tokenizers starts its threads
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(list(lines), trainer)
    return tokenizer.to_str(pretty=True)


def corpus_lines(cache: Path) -> list[str]:
    """The corpus's lines, in the order demo_corpus gives them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import demo_corpus
    streams, _ = demo_corpus.load_texts(cache)
    return [line for stream in streams.values() for line in stream.decode("ascii").split("\n")
            if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for tokenizer.json")
    parser.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    parser.add_argument("--cache", type=Path, default=None,
                        help="where demo_corpus keeps the .deb files (default build/corpus)")
    args = parser.parse_args(argv)
    if args.vocab_size < 257:
        parser.error("--vocab-size must be at least 257 (256 bytes and one merge)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import demo_corpus
    lines = corpus_lines(args.cache or demo_corpus.DEFAULT_CACHE)
    text = train(lines, args.vocab_size)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tokenizer.json").write_text(text, encoding="utf-8")
    from glassllm.bpe import load_tokenizer  # the reader the site uses must read it
    tokenizer = load_tokenizer(args.out)
    sample = "\n".join(lines[:2000])
    per_token = len(sample.encode("utf-8")) / len(tokenizer.encode(sample))
    print(f"wrote {args.out / 'tokenizer.json'}: {tokenizer.vocab_size} tokens, "
          f"{per_token:.2f} bytes per token on the corpus's first 2,000 lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
