"""Models and configs for tests: a folder holding the bundled model's own files; published config.json texts."""

from __future__ import annotations

import shutil
from pathlib import Path

from kvviz.model import loading

GEMMA3_4B = {  # google/gemma-3-4b-pt config.json, text part as published (heads, head size, pattern: defaults)
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "torch_dtype": "bfloat16",
    "text_config": {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "sliding_window": 1024,
    },
}


def model_folder(folder: Path, with_tokenizer: bool = True) -> Path:
    """`folder`, made, holding the bundled model's config and weights (and its tokenizer files, unless told not)."""
    folder.mkdir(parents=True)
    names = ["config.json", "model.safetensors"] + (
        ["tokenizer.json", "tokenizer_config.json"] if with_tokenizer else []
    )
    for name in names:
        shutil.copy(loading.BUNDLED_DIR / name, folder / name)
    return folder
