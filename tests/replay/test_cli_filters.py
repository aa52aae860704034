"""`record --trace-steps/--trace-layers/--trace-heads`: checked as glassllm.Tracer checks them,
then refused with the Python way to do it, since a recording holds every event of a run."""

import pytest

from glassllm.__main__ import main


def refused(args, tmp_path, capsys):
    out = tmp_path / "run.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["record", "hello", "--layers", "2", "--heads", "4", *args, "--out", str(out)])
    assert exit_info.value.code == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


def test_valid_filters_are_refused_with_the_tracer_call_to_use(tmp_path, capsys):
    err = refused(["--trace-steps", "attn.softmax, logits", "--trace-layers", "1"], tmp_path,
                  capsys)
    assert "a recording holds every event of a run" in err
    assert "glassllm.Tracer(steps=['attn.softmax', 'logits'], layers=[1])" in err


@pytest.mark.parametrize("args, message", [
    (["--trace-steps", "attn.nope"], "unknown step ID 'attn.nope'"),
    (["--trace-steps", ","], r"steps=[] would record nothing"),
    (["--trace-layers", "one"], "--trace-layers takes comma-separated whole numbers"),
    (["--trace-heads", "-1"], "heads must be non-negative integers"),
    (["--trace-layers", "2"], "--trace-layers asks for layers [2], but the model has 2 layers"),
    (["--trace-heads", "0,4"], "--trace-heads asks for heads [0, 4], but the model has 4 heads"),
])
def test_bad_filters_get_the_tracers_errors(args, message, tmp_path, capsys):
    assert message in refused(args, tmp_path, capsys)
