"""``tf.config`` beyond threading, and ``tf.device``: the devices tapeflow runs on.

tapeflow computes on the CPU. ``list_physical_devices`` reports that CPU (and no GPU), and
``set_logical_device_configuration`` splits it into virtual CPUs (``/device:CPU:0``, ``CPU:1``
...), as TensorFlow's guides do to try distribution strategies on one machine. ``tf.device`` is
a real scope: eager tensors computed inside carry its device string. A GPU (or any device not
present) requested there is placed on the CPU, TensorFlow's soft-placement rule; with soft
placement turned off it raises instead.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state

_PREFIX = "/job:localhost/replica:0/task:0/device:"


@export("config.PhysicalDevice")
class PhysicalDevice(NamedTuple):
    name: str
    device_type: str


@export("config.LogicalDevice")
class LogicalDevice(NamedTuple):
    name: str
    device_type: str


@export("config.LogicalDeviceConfiguration",
        "config.experimental.VirtualDeviceConfiguration")
class LogicalDeviceConfiguration(NamedTuple):
    memory_limit: Any = None
    experimental_priority: Any = None
    experimental_device_ordinal: Any = None


_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")
_settings: dict = {"logical": None, "visible": [_CPU], "soft_placement": True, "jit": False,
                   "determinism": False, "log_placement": False, "memory_growth": {},
                   "initialized": False, "tf32": True, "device_policy": "silent",
                   "synchronous": True, "mlir_bridge": False}


def _physical(device_type: str | None) -> list:
    return [_CPU] if device_type in (None, "CPU") else []


@export("config.list_physical_devices", "config.experimental.list_physical_devices")
def list_physical_devices(device_type: str | None = None) -> list:
    """The CPU (tapeflow has no GPU backend: a GPU query gives [])."""
    return _physical(device_type)


def _logical_count() -> int:
    configs = _settings["logical"]
    return len(configs) if configs else 1


@export("config.list_logical_devices", "config.experimental.list_logical_devices")
def list_logical_devices(device_type: str | None = None) -> list:
    """The logical devices: one CPU, or the virtual CPUs configured for it."""
    _settings["initialized"] = True
    if device_type not in (None, "CPU"):
        return []
    return [LogicalDevice(f"{_PREFIX}CPU:{i}", "CPU") for i in range(_logical_count())]


@export("config.set_logical_device_configuration",
        "config.experimental.set_virtual_device_configuration")
def set_logical_device_configuration(device: PhysicalDevice, logical_devices: list) -> None:
    """Split the CPU into len(logical_devices) virtual CPUs (before devices are used)."""
    if device.device_type != "CPU":
        raise ValueError(f"set_logical_device_configuration: no such device {device.name}")
    if _settings["initialized"] and len(logical_devices or []) != _logical_count():
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    _settings["logical"] = list(logical_devices) if logical_devices else None


@export("config.get_logical_device_configuration",
        "config.experimental.get_virtual_device_configuration")
def get_logical_device_configuration(device: PhysicalDevice) -> list | None:
    return _settings["logical"]


@export("config.get_visible_devices", "config.experimental.get_visible_devices")
def get_visible_devices(device_type: str | None = None) -> list:
    return [d for d in _settings["visible"] if device_type in (None, d.device_type)]


@export("config.set_visible_devices", "config.experimental.set_visible_devices")
def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    if _CPU not in devices and device_type in (None, "CPU"):
        raise ValueError("tapeflow runs on the CPU: it cannot be hidden")
    _settings["visible"] = [_CPU]


@export("config.experimental.set_memory_growth")
def set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    """Recorded only: host memory already grows on demand."""
    _settings["memory_growth"][device.name] = bool(enable)


@export("config.experimental.get_memory_growth")
def get_memory_growth(device: PhysicalDevice) -> bool:
    return _settings["memory_growth"].get(device.name, False)


@export("config.set_soft_device_placement")
def set_soft_device_placement(enabled: bool) -> None:
    _settings["soft_placement"] = bool(enabled)


@export("config.get_soft_device_placement")
def get_soft_device_placement() -> bool:
    return _settings["soft_placement"]


# called with the new setting when set_jit changes it: tf.functions created without
# jit_compile register here to drop the graphs they compiled under the old one (graph/, above)
jit_changed_hooks: list = []


@export("config.optimizer.set_jit")
def set_jit(enabled: Any) -> None:
    """The jit_compile of every ``tf.function`` that does not set it: calls after this one
    compile (or stop compiling) their graphs, as TF's auto-clustering applies from then on."""
    enabled = bool(enabled)
    if enabled != _settings["jit"]:
        _settings["jit"] = enabled
        for hook in list(jit_changed_hooks):
            hook(enabled)


@export("config.optimizer.get_jit")
def get_jit() -> bool:
    return _settings["jit"]


@export("config.optimizer.set_experimental_options")
def set_experimental_options(options: dict) -> None:
    _settings.setdefault("options", {}).update(options)


@export("config.optimizer.get_experimental_options")
def get_experimental_options() -> dict:
    return dict(_settings.get("options", {}))


@export("config.experimental.enable_op_determinism")
def enable_op_determinism() -> None:
    """Deterministic ops, as TensorFlow means it. tapeflow's kernels are deterministic already
    (parallel work is split by size alone and summed in a fixed order); what changes is
    TensorFlow's rule for randomness: a random op or shuffle with neither a global nor an op
    seed raises RuntimeError, and so does ``Generator.from_non_deterministic_state``."""
    _settings["determinism"] = True


def op_determinism_enabled() -> bool:
    return _settings["determinism"]


# --- switches that matter on accelerators only: recorded, answered as TensorFlow on a CPU ------


@export("config.experimental.enable_tensor_float_32_execution")
def enable_tensor_float_32_execution(enabled: bool) -> None:
    """TF32 matmuls on NVIDIA GPUs; no effect on the CPU (float32 stays float32)."""
    _settings["tf32"] = bool(enabled)


@export("config.experimental.tensor_float_32_execution_enabled")
def tensor_float_32_execution_enabled() -> bool:
    return _settings["tf32"]


@export("config.experimental.set_device_policy")
def set_device_policy(device_policy: str | None) -> None:
    """How tensors move between devices ('silent', 'warn', 'explicit'...; one device here)."""
    _settings["device_policy"] = "silent" if device_policy is None else str(device_policy)


@export("config.experimental.get_device_policy")
def get_device_policy() -> str:
    return _settings["device_policy"]


@export("config.experimental.set_synchronous_execution")
def set_synchronous_execution(enable: bool) -> None:
    """Eager ops run synchronously in tapeflow whatever this says (recorded)."""
    _settings["synchronous"] = bool(enable)


@export("config.experimental.get_synchronous_execution")
def get_synchronous_execution() -> bool:
    return _settings["synchronous"]


@export("config.experimental.enable_mlir_bridge")
def enable_mlir_bridge() -> None:
    _settings["mlir_bridge"] = True


@export("config.experimental.disable_mlir_bridge")
def disable_mlir_bridge() -> None:
    _settings["mlir_bridge"] = False


@export("config.experimental.get_device_details")
def get_device_details(device: PhysicalDevice) -> dict:
    """Details TensorFlow reports for GPUs (name, compute capability); empty for a CPU."""
    return {}


@export("config.experimental.get_memory_info")
def get_memory_info(device: str) -> dict:
    """TensorFlow's answer for a CPU device: no allocator statistics ({'current': 0,
    'peak': 0}); tapeflow's memory planning is reported by ``concrete.memory_plan()``."""
    return {"current": 0, "peak": 0}


@export("config.experimental.get_memory_usage")
def get_memory_usage(device: str) -> int:
    """Deprecated in TensorFlow in favour of get_memory_info(device)['current']."""
    import warnings

    warnings.warn("get_memory_usage is deprecated: use "
                  "tf.config.experimental.get_memory_info(device)['current'] instead.",
                  DeprecationWarning, stacklevel=2)
    return get_memory_info(device)["current"]


@export("config.experimental.reset_memory_stats")
def reset_memory_stats(device: str) -> None:
    """Nothing to reset on a CPU device (see get_memory_info)."""


@export("debugging.set_log_device_placement")
def set_log_device_placement(enabled: bool) -> None:
    """Print each eager op's device as it runs (all ops run on the CPU)."""
    _settings["log_placement"] = bool(enabled)


@export("debugging.get_log_device_placement")
def get_log_device_placement() -> bool:
    return _settings["log_placement"]


# --- tf.device --------------------------------------------------------------------------------

_SPEC = re.compile(r"(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?"
                   r"(?:/(?:device:)?(?P<type>[A-Za-z_]+):(?P<index>\d+|\*))?$")


def resolve(name: str) -> str:
    """The full device string tapeflow places `name` on (soft placement to CPU:0)."""
    m = _SPEC.match(name or "")
    if not name or m is None or m.group("type") is None:
        if name and m is None:
            raise ValueError(f"tf.device: cannot parse device specification {name!r}")
        return f"{_PREFIX}CPU:0"
    kind = m.group("type").upper()
    index = 0 if m.group("index") == "*" else int(m.group("index"))
    if kind == "CPU" and index < _logical_count():
        return f"{_PREFIX}CPU:{index}"
    if not _settings["soft_placement"]:
        raise errors.InvalidArgumentError(
            f"Could not satisfy device specification {name!r}: available devices are "
            f"{[d.name for d in list_logical_devices()]} (soft placement is off)")
    return f"{_PREFIX}CPU:0"


@export("device")
@contextlib.contextmanager
def device(device_name: Any) -> Iterator[None]:
    """Place ops (and the tensors they make) inside on `device_name`."""
    name = device_name.to_string() if hasattr(device_name, "to_string") else device_name
    previous = _state.device
    _state.device = None if name is None else resolve(str(name))
    _settings["initialized"] = True
    try:
        yield
    finally:
        _state.device = previous


@export("DeviceSpec")
class DeviceSpec:
    """A device name's parts (``tf.DeviceSpec``)."""

    def __init__(self, job: str | None = None, replica: int | None = None,
                 task: int | None = None, device_type: str | None = None,
                 device_index: int | None = None):
        self.job, self.replica, self.task = job, replica, task
        self.device_type, self.device_index = device_type, device_index

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        parts: dict = {}
        for piece in spec.strip("/").split("/"):
            if ":" not in piece:
                continue
            key, _, value = piece.partition(":")
            if key in ("job",):
                parts["job"] = value
            elif key in ("replica", "task"):
                parts[key] = int(value)
            elif key == "device":
                kind, _, index = value.partition(":")
                parts["device_type"] = kind.upper()
                parts["device_index"] = None if index in ("", "*") else int(index)
            else:
                parts["device_type"] = key.upper()
                parts["device_index"] = None if value == "*" else int(value)
        return cls(**parts)

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out

    def __repr__(self) -> str:
        return f"DeviceSpec({self.to_string()!r})"
