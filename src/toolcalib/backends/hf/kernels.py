"""The kernel family of a transformers process (the backend's `kernels` option), torch-free.

`native` lets torch (ATen), oneDNN and MKL pick the widest instructions the CPU has: fastest, but
the last bits of a float computation follow the machine (ATen's and oneDNN's instruction set,
and MKL's code path, which also depends on the CPU's vendor), and so may greedy emissions (int8
activation quantization turns such an ulp into a whole level). The identity records the kernel
capability and the vendor, so the response store never mixes them.

`portable` computes with the same code on every x86-64 CPU that has AVX2: ATen's AVX2 kernels,
oneDNN capped at AVX2 (no VNNI, no AVX-512) and MKL in its `COMPATIBLE` conditional numerical
reproducibility mode (one SSE2 code path for Intel and AMD; its `AVX2` mode still splits by
vendor). Checked under QEMU's emulated AVX2 CPUs: Intel and AMD give this AVX-512 machine's
bytes (bench/README.md). MKL's `COMPATIBLE` path is about half its AVX2 path's speed, so
`portable` leaves it only the attention's float products and decode's few-row linear layers:
the other float linear layers run on oneDNN (`hf.onednn`), int8 ones too (`hf.int8`).

The libraries read these variables when torch loads: `prepare` sets them before that, `check`
refuses a process that loaded torch without them.
"""

from __future__ import annotations

import os
import sys

from toolcalib.jsonio import InputError

PORTABLE = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
            "MKL_CBWR": "COMPATIBLE"}
"""What `kernels: portable` sets: the variables each library reads once, when it loads."""


def prepare(kernels: str) -> None:
    """Set the portable family's variables for this process, unless torch has loaded already."""
    if kernels == "portable" and "torch" not in sys.modules:
        os.environ.update(PORTABLE)


def check(model: str, kernels: str, capability: str) -> None:
    """Raise unless this process computes with the kernels `kernels` names (`capability`: the
    family torch dispatches to)."""
    if kernels == "native":
        return
    unset = sorted(key for key, value in PORTABLE.items() if os.environ.get(key) != value)
    if capability == "AVX2" and not unset:
        return
    needed = " ".join(f"{key}={value}" for key, value in PORTABLE.items())
    raise InputError(
        f"model '{model}': kernels 'portable' needs {needed} in the environment before torch "
        f"loads, on a CPU with AVX2 (torch dispatches to {capability}; not set: "
        f"{', '.join(unset) or 'none'}). toolcalib's commands set them when a process's first "
        "model asks for them; one process computes with one kernel family, so its models "
        "must agree on `kernels`")


def cpu_vendor() -> str:
    """The CPU's vendor as the kernel libraries see it (`GenuineIntel`, `AuthenticAMD`, ...)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
