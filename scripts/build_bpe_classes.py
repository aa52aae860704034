"""Write glassllm/text/bpe_classes.py: the character classes of GPT-2's word pattern, as the
``tokenizers`` package's Oniguruma sees them.

    python scripts/build_bpe_classes.py

The pattern (``\\p{L}``, ``\\p{N}``, ``\\s``) depends on the Unicode version of the regex
engine: Python's ``unicodedata`` is older than the tokenizers package's Oniguruma (Python 3.11
knows Unicode 14, tokenizers 0.23 Unicode 16), and Pyodide's is another again. So glassllm
does not ask ``unicodedata``: this script asks ``tokenizers`` itself, code point by code point,
how its pre-tokenizer splits a letter, a digit or a mark followed by that code point, and
writes the three classes as ranges. ``tests/glassllm/test_load_tokenizer.py`` checks the file
against tokenizers for every code point.
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "glassllm" / "text" / "bpe_classes.py"


def classify() -> dict[str, list[int]]:
    """Every code point (surrogates aside) as 'L', 'N', 'S' (white space) or other."""
    import tokenizers
    from tokenizers import pre_tokenizers
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str
    classes: dict[str, list[int]] = {"L": [], "N": [], "S": []}
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        if len(split("a" + char)) == 1:      # joins a letter run: \p{L}
            classes["L"].append(code)
        elif len(split("1" + char)) == 1:    # joins a digit run: \p{N}
            classes["N"].append(code)
        elif len(split("!" + char)) == 2:    # not joining a run of other marks: \s
            classes["S"].append(code)
    classes["version"] = tokenizers.__version__
    return classes


def ranges(codes: list[int]) -> str:
    out, start = [], None
    for i, code in enumerate(codes):
        if start is None:
            start = code
        if i + 1 == len(codes) or codes[i + 1] != code + 1:
            out.append(f"{start:x}" if start == code else f"{start:x}-{code:x}")
            start = None
    return " ".join(out)


def main() -> int:
    classes = classify()
    lines = ['"""The character classes of GPT-2\'s word pattern as the tokenizers package '
             f'{classes["version"]} sees them\n(code point ranges in hex), written by '
             'scripts/build_bpe_classes.py: do not edit."""', ""]
    for name, key in (("LETTERS", "L"), ("NUMBERS", "N"), ("WHITE_SPACE", "S")):
        body = ranges(classes[key])
        chunks = [body[i:i + 90] for i in range(0, len(body), 90)]
        lines.append(f"{name} = (")
        lines += [f'    "{chunk}"' for chunk in chunks]
        lines.append(")")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(classes['L'])} letters, {len(classes['N'])} numbers, "
          f"{len(classes['S'])} white space")
    return 0


if __name__ == "__main__":
    sys.exit(main())
