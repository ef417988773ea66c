"""tf.keras.utils.enable/disable_interactive_logging: fit's progress lines and callback notes
go to stdout by default and to the ``tapeflow.keras`` logger once disabled."""

import logging
import threading

import numpy as np

import tapeflow as tf
from tapeflow.keras import utils


def _fit(verbose):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=1e9,
                                            verbose=1)
    model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=4, epochs=3, verbose=verbose,
              callbacks=[stop])


def test_disabled_logging_sends_messages_to_the_logger(capsys, caplog):
    assert utils.is_interactive_logging_enabled()
    _fit(verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/3" in out and "early stopping" in out
    utils.disable_interactive_logging()
    try:
        assert not utils.is_interactive_logging_enabled()
        with caplog.at_level(logging.INFO, logger="tapeflow.keras"):
            _fit(verbose=1)
        assert capsys.readouterr().out == ""
        logged = [r.getMessage() for r in caplog.records if r.name == "tapeflow.keras"]
        assert "Epoch 1/3" in logged and any("2/2 [====" in m for m in logged)
        assert any("early stopping" in m for m in logged)
        seen = []
        worker = threading.Thread(target=lambda: seen.append(
            utils.is_interactive_logging_enabled()))
        worker.start()
        worker.join()
        assert seen == [True]  # per thread, as tf-keras
    finally:
        utils.enable_interactive_logging()
    assert utils.is_interactive_logging_enabled()
    tf.keras.utils.Progbar(2, verbose=2).update(2, finalize=True)
    assert capsys.readouterr().out.startswith("2/2 - ")
