"""Steps whose marked line takes a slice of a fused product (``qkv[..., :q_end]``: the q, k
and v projections computed by one matrix product with their weights stacked): the product's
line, so a step page shows and links the product, not only the slice."""

from __future__ import annotations

import re

_SLICE = re.compile(r"\b([A-Za-z_]\w*)\[\.\.\.,")


def fused_product(code: str, first: int, last: int) -> tuple[str, int] | None:
    """(name, line) of the ``name = linear(...)`` product that the statement on lines
    ``first``..``last`` slices (``name[..., a:b]``), searched upwards within its function;
    None when the statement slices no product."""
    lines = code.split("\n")
    match = _SLICE.search("\n".join(lines[first - 1:last]))
    if match is None:
        return None
    assign = re.compile(rf"^\s*{re.escape(match.group(1))}\s*=\s*linear\(")
    for number in range(first - 1, 0, -1):
        text = lines[number - 1]
        if assign.match(text):
            return match.group(1), number
        if text.lstrip().startswith("def "):
            return None
    return None
