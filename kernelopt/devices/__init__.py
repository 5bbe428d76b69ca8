"""Idle-device gates (neuron, nvidia, rocm, none), device locks and leases."""

from kernelopt.devices.acquire import Lease, NoIdleDevice, WaitNotice, acquire, acquire_many
from kernelopt.devices.base import DeviceStatus, Gate, GateError, ProcessInfo
from kernelopt.devices.locks import DEFAULT_LOCK_DIR, DeviceLock, try_lock
from kernelopt.devices.registry import GATES, AutoGate, detect_kind, make_gate, survey_all

__all__ = [
    "DEFAULT_LOCK_DIR",
    "AutoGate",
    "GATES",
    "DeviceLock",
    "DeviceStatus",
    "Gate",
    "GateError",
    "Lease",
    "NoIdleDevice",
    "ProcessInfo",
    "WaitNotice",
    "acquire",
    "acquire_many",
    "detect_kind",
    "make_gate",
    "survey_all",
    "try_lock",
]
