"""The main job: ``tapeflow train [densenet|revnet|cnn|mlp]``."""

import os
import re

import pytest

from tapeflow.cli import main
from tapeflow.keras import backend


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _accuracy(text: str) -> float:
    return float(re.search(r"held-out accuracy: ([0-9.]+)", text).group(1))


def test_train_mlp_reports_accuracy_checkpoint_and_step_times(tmp_path, capsys):
    assert main(["train", "mlp", "--epochs", "3", "--checkpoint-dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "Epoch 3/3" in captured.out + captured.err
    assert _accuracy(out) > 0.9
    path = re.search(r"checkpoint saved: (\S+)", out).group(1)
    assert path.startswith(str(tmp_path)) and any(
        name.startswith(os.path.basename(path)) for name in os.listdir(os.path.dirname(path)))
    assert re.search(r"training step \(batch 64\): eager [0-9.]+ ms, graph [0-9.]+ ms", out)


def test_train_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["train", "resnet"])
    with pytest.raises(SystemExit):
        main(["train", "mlp", "--epochs", "0"])
    assert "--epochs must be a positive integer" in capsys.readouterr().err


@pytest.mark.slow
def test_default_densenet_reaches_97_percent_held_out(tmp_path, capsys):
    assert main(["train", "--checkpoint-dir", str(tmp_path)]) == 0
    assert _accuracy(capsys.readouterr().out) >= 0.97


def test_train_eager_flag_runs_fit_without_graphs(tmp_path, capsys):
    assert main(["train", "mlp", "--epochs", "1", "--eager", "--batch-size", "128",
                 "--checkpoint-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "eager mode" in out and "batch 128" in out
    assert _accuracy(out) > 0.8
