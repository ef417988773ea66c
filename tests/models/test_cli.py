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
    logdir = str(tmp_path / "logs")
    assert main(["train", "mlp", "--epochs", "3", "--checkpoint-dir", str(tmp_path),
                 "--logdir", logdir, "--profile-batch", "2"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "Epoch 3/3" in captured.out + captured.err
    assert _accuracy(out) > 0.9
    path = re.search(r"checkpoint saved: (\S+)", out).group(1)
    assert path.startswith(str(tmp_path)) and any(
        name.startswith(os.path.basename(path)) for name in os.listdir(os.path.dirname(path)))
    assert re.search(r"training step \(batch 64\): eager [0-9.]+ ms, graph [0-9.]+ ms", out)
    assert f"tensorboard --logdir {logdir}" in out
    train_events = os.listdir(os.path.join(logdir, "train"))
    assert any(name.startswith("events.out.tfevents.") for name in train_events)
    assert "compute time and memory of batch 2" in out
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    (events,) = [n for n in train_events if n.startswith("events.out.tfevents.")]
    tags = [e.tagged_run_metadata.tag for e in LegacyEventFileLoader(
        os.path.join(logdir, "train", events)).Load() if e.HasField("tagged_run_metadata")]
    assert tags == ["batch_2"]
    assert os.listdir(os.path.join(logdir, "train", "plugins", "profile"))


def _rejected(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "Epoch" not in captured.out + captured.err  # refused before any training
    assert "usage: tapeflow train" in captured.err  # the subcommand's usage, not the top level
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize("argv, message", [
    (["train", "resnet"], "argument model: invalid choice: 'resnet'"),
    (["train", "mlp", "--epochs", "0"], "argument --epochs: must be a positive integer, got 0"),
    (["train", "mlp", "--batch-size", "x"], "argument --batch-size: expected a positive integer"),
    (["train", "mlp", "--learning-rate", "-1"], r"argument --learning-rate: must be a number in "
                                                r"(0, 1], got -1"),
    (["train", "mlp", "--learning-rate", "nan"], "must be a number in (0, 1], got nan"),
])
def test_train_rejects_bad_arguments_up_front(capsys, argv, message):
    assert message in _rejected(capsys, argv)


def test_bad_checkpoint_dir_is_refused_before_training(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    err = _rejected(capsys, ["train", "mlp", "--checkpoint-dir", str(blocker / "sub")])
    assert f"argument --checkpoint-dir: cannot create '{blocker / 'sub'}'" in err


def test_help_lists_models_and_defaults_and_version(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "``" not in out
    for name in ("densenet", "revnet", "cnn", "mlp"):
        assert re.search(rf"^  {name} +\d+ +\d+ +[0-9.e-]+", out, re.M), name
    assert re.search(r"densenet .*\(default\)", out)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert re.fullmatch(r"tapeflow \d+\.\d+\.\d+ \(TensorFlow 2\.\d+\.\d+ API\)\n",
                        capsys.readouterr().out)


@pytest.mark.slow
def test_default_densenet_reaches_97_percent_held_out(tmp_path, capsys):
    assert main(["train", "--checkpoint-dir", str(tmp_path), "--logdir",
                 str(tmp_path / "logs")]) == 0
    assert _accuracy(capsys.readouterr().out) >= 0.97


def test_train_eager_flag_runs_fit_without_graphs(tmp_path, capsys):
    assert main(["train", "mlp", "--epochs", "1", "--eager", "--batch-size", "128",
                 "--checkpoint-dir", str(tmp_path), "--logdir", ""]) == 0
    out = capsys.readouterr().out
    assert "eager mode" in out and "batch 128" in out and " 1 epoch, " in out
    assert _accuracy(out) > 0.8
    assert out.count(f"checkpoint saved: {tmp_path / 'mlp' / 'ckpt-1'}\n") == 1
    # a second run adds ckpt-2 instead of overwriting the first run's checkpoint
    assert main(["train", "mlp", "--epochs", "1", "--eager", "--batch-size", "256",
                 "--checkpoint-dir", str(tmp_path)]) == 0
    assert f"checkpoint saved: {tmp_path / 'mlp' / 'ckpt-2'}\n" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "mlp")) == ["checkpoint", "ckpt-1.safetensors",
                                                    "ckpt-2.safetensors"]


def test_dtype_policy_applies_to_the_model_and_is_not_left_behind(tmp_path, capsys):
    from tapeflow.keras import layers, mixed_precision

    assert main(["train", "mlp", "--epochs", "1", "--batch-size", "256", "--dtype-policy",
                 "mixed_float16", "--checkpoint-dir", str(tmp_path), "--logdir",
                 str(tmp_path / "logs")]) == 0
    out = capsys.readouterr().out
    assert "mixed_float16" in out and _accuracy(out) > 0.8
    assert mixed_precision.global_policy().name == "float32"
    backend.set_floatx("float64")
    try:
        assert layers.Dense(2).dtype == "float64"  # the default follows floatx again
    finally:
        backend.set_floatx("float32")
