"""GPUs seqpoint knows (device description files) and the device model that times a counted
step on them (torch-free): :data:`GPU_SPECS` (each a ``GPUSpec``), :func:`resolve_device`;
:class:`DeviceModel` (:data:`MODEL`, fitted on per-operation tables, and :data:`ROOFLINE`,
the bound) and :class:`Target`, a device as counting times it."""

from seqpoint.devices._model import MODEL, ROOFLINE, DeviceModel, Target, model_band
from seqpoint.devices._specs import GPU_SPECS, device_key, gpu_named, resolve_device

__all__ = ["GPU_SPECS", "MODEL", "ROOFLINE", "DeviceModel", "Target", "device_key", "gpu_named", "model_band",
           "resolve_device"]
