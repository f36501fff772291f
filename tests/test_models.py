"""The model loader: bundled model, random architectures, pretrained lookups that fail fast offline."""
from __future__ import annotations

import json
import time

import pytest
import torch

from kvviz import models
from kvviz.stepping import StepEngine


def test_bundled_is_a_real_gpt2_with_a_byte_level_tokenizer(bundled):
    from transformers import GPT2LMHeadModel

    assert isinstance(bundled.model, GPT2LMHeadModel)
    info = bundled.info
    assert info.kind == "bundled" and not info.weights_are_random
    assert info.n_layer * info.n_head > 1 and info.head_dim * info.n_head == info.n_embd
    assert info.n_params == sum(p.numel() for p in bundled.model.parameters())
    text = "ROMEO:\nBut soft! 🙂"
    assert bundled.tokenizer.decode(bundled.tokenizer(text).input_ids) == text


def test_bundled_assets_are_safetensors_and_small():
    files = {p.name: p.stat().st_size for p in models.BUNDLED_DIR.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pkl")) for n in files)
    assert sum(files.values()) < 15 * 2**20


def test_bundled_model_writes_shakespeare_like_text(bundled):
    """The trained model, not noise: its validation loss is far below a uniform guess, and greedy text
    after a speaker name contains line breaks and real words from the vocabulary of the plays."""
    report = json.loads((models.BUNDLED_DIR / "training_report.json").read_text())
    uniform_loss = torch.log(torch.tensor(float(bundled.info.vocab_size))).item()
    assert report["validation_loss"] < 0.7 * uniform_loss
    engine = StepEngine(bundled)
    engine.prefill("ROMEO:\n")
    for _ in range(60):
        engine.step()
    text = bundled.tokenizer.decode(engine.token_ids)
    words = {w.strip(".,;:!?'").lower() for w in text.split()}
    assert "\n" in text[8:]
    assert len(words & {"the", "and", "i", "to", "of", "my", "you", "a", "that", "is", "not", "me", "your"}) >= 2


def test_random_architecture_has_the_real_gpt2_shape():
    loaded = models.load_model("random:distilgpt2", attn_implementation="sdpa")
    info = loaded.info
    assert info.weights_are_random and "RANDOM" in info.label
    assert (info.n_layer, info.n_head, info.head_dim, info.n_positions) == (6, 12, 64, 1024)
    assert info.n_params == 81_912_576  # distilgpt2's parameter count with tied embeddings


def test_unknown_random_architecture_is_a_clear_error():
    with pytest.raises(models.ModelLoadError, match="Unknown GPT-2 architecture"):
        models.load_model("random:gpt5")


def test_pretrained_lookup_fails_fast_offline_and_falls_back():
    began = time.perf_counter()
    loaded, notice = models.load_model_or_bundled("gpt2-medium")
    assert time.perf_counter() - began < 10
    assert loaded.info.kind == "bundled"
    assert "offline" in notice and "gpt2-medium" in notice


def test_local_folder_is_loaded_and_bad_folders_are_explained(tmp_path, bundled):
    bundled.model.save_pretrained(tmp_path / "copy")
    bundled.tokenizer.save_pretrained(tmp_path / "copy")
    loaded = models.load_model(str(tmp_path / "copy"))
    assert loaded.info.kind == "pretrained" and loaded.info.n_params == bundled.info.n_params
    with pytest.raises(models.ModelLoadError, match="no config.json"):
        models.load_model(str(tmp_path))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    with pytest.raises(models.ModelLoadError):
        models.load_model(str(tmp_path / "broken"))


def test_bundled_info_from_disk_equals_the_loaded_models_info(bundled):
    """The home page describes the model without importing torch; the description must be the real one."""
    assert models.bundled_info("eager") == bundled.info


def test_pretrained_name_is_found_in_the_hugging_face_cache(tmp_path):
    """A user who has `gpt2` cached gets it by name, offline. The cache layout is the hub's own
    (models--NAME/refs/main -> snapshots/<commit>/); huggingface_hub reads HF_HUB_CACHE at import, so the
    lookup runs in a fresh interpreter. The weights placed there are the bundled model's."""
    import os
    import shutil
    import subprocess
    import sys

    snapshot = tmp_path / "models--gpt2" / "snapshots" / "0123abcd"
    shutil.copytree(models.BUNDLED_DIR, snapshot)
    (tmp_path / "models--gpt2" / "refs").mkdir()
    (tmp_path / "models--gpt2" / "refs" / "main").write_text("0123abcd")
    code = "from kvviz.models import load_model; i = load_model('gpt2').info; print(i.kind, i.spec, i.n_params)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}, cwd=models.BUNDLED_DIR.parents[2],
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pretrained", "gpt2", str(models.bundled_info().n_params)]
