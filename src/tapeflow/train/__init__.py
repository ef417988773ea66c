"""``tf.train``: checkpoints (safetensors, atomic writes, deferred restoration)."""

from tapeflow.train.checkpoint import Checkpoint, LoadStatus, load_weights, save_weights
from tapeflow.train.checkpoint_manager import CheckpointManager
from tapeflow.train.checkpoint_reading import (
    CheckpointOptions,
    CheckpointReader,
    Coordinator,
    checkpoints_iterator,
    get_checkpoint_state,
    load_checkpoint,
)
from tapeflow.train.checkpoint_state import latest_checkpoint
from tapeflow.train.checkpoint_utils import list_variables, load_variable

CheckpointLoadStatus = LoadStatus
