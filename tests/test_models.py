"""The model loader: bundled model, random architectures, pretrained lookups that fail fast offline."""

from __future__ import annotations

import json
import threading
import time

import pytest

from kvviz.model import loading
from kvviz.model.dims import GPT2_FAMILY
from kvviz.step.records import DEFAULT_SAMPLING
from support.models import model_folder
from support.pages import REPO


@pytest.mark.model
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
    files = {p.name: p.stat().st_size for p in loading.BUNDLED_DIR.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pkl")) for n in files)
    assert sum(files.values()) < 15 * 2**20


@pytest.mark.model
def test_bundled_model_writes_shakespeare_like_text(bundled):
    """The trained model, not noise: its validation loss is far below a uniform guess, and text after a speaker name,
    drawn with the step page's default decoding (seeded sampling: greedy loops, tests/test_step_copy.py), contains
    line breaks and real words from the vocabulary of the plays."""
    import torch

    from kvviz.step.engine import StepEngine

    report = json.loads((loading.BUNDLED_DIR / "training_report.json").read_text())
    uniform_loss = torch.log(torch.tensor(float(bundled.info.vocab_size))).item()
    assert report["validation_loss"] < 0.7 * uniform_loss
    engine = StepEngine(bundled)
    engine.prefill("ROMEO:\n")
    for _ in range(60):
        engine.step(DEFAULT_SAMPLING)
    text = bundled.tokenizer.decode(engine.token_ids)
    words = {w.strip(".,;:!?'").lower() for w in text.split()}
    assert "\n" in text[8:]
    assert len(words & {"the", "and", "i", "to", "of", "my", "you", "a", "that", "is", "not", "me", "your"}) >= 2


@pytest.mark.model
def test_random_architecture_has_the_real_gpt2_shape():
    from kvviz.model import loaders

    loaded = loaders.load_model("random:distilgpt2", attn_implementation="sdpa")
    info = loaded.info
    assert info.weights_are_random and "RANDOM" in info.label
    assert (info.n_layer, info.n_head, info.head_dim, info.n_positions) == (6, 12, 64, 1024)
    assert info.n_params == 81_912_576  # distilgpt2's parameter count with tied embeddings


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_unknown_random_architecture_is_a_clear_error():
    from kvviz.model import loaders

    with pytest.raises(loading.ModelLoadError, match="Unknown GPT-2 architecture"):
        loaders.load_model("random:gpt5")


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_pretrained_lookup_fails_fast_offline_with_a_one_line_message():
    from kvviz.model import loaders

    began = time.perf_counter()
    with pytest.raises(loading.ModelLoadError) as caught:
        loaders.load_model("gpt2-medium")
    assert time.perf_counter() - began < 10
    message = str(caught.value)
    assert "offline" in message and "gpt2-medium" in message and "\n" not in message


@pytest.mark.model
def test_local_folder_is_loaded_and_bad_folders_are_explained(tmp_path, bundled):
    from kvviz.model import loaders

    bundled.model.save_pretrained(tmp_path / "copy")
    bundled.tokenizer.save_pretrained(tmp_path / "copy")
    loaded = loaders.load_model(str(tmp_path / "copy"))
    assert loaded.info.kind == "pretrained" and loaded.info.n_params == bundled.info.n_params
    with pytest.raises(loading.ModelLoadError, match="no config.json"):
        loaders.load_model(str(tmp_path))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    with pytest.raises(loading.ModelLoadError):
        loaders.load_model(str(tmp_path / "broken"))


@pytest.mark.model
def test_bundled_info_from_disk_equals_the_loaded_models_info(bundled):
    """The home page describes the model without importing torch; the description must be the real one."""
    assert loading.bundled_info("eager") == bundled.info


@pytest.mark.slow
def test_pretrained_name_is_found_in_the_hugging_face_cache(tmp_path):
    """A user who has `gpt2` cached gets it by name, offline. The cache layout is the hub's own
    (models--NAME/refs/main -> snapshots/<commit>/); huggingface_hub reads HF_HUB_CACHE at import, so the
    lookup runs in a fresh interpreter. The weights placed there are the bundled model's."""
    import os
    import shutil
    import subprocess
    import sys

    snapshot = tmp_path / "models--gpt2" / "snapshots" / "0123abcd"
    shutil.copytree(loading.BUNDLED_DIR, snapshot)
    (tmp_path / "models--gpt2" / "refs").mkdir()
    (tmp_path / "models--gpt2" / "refs" / "main").write_text("0123abcd")
    code = "from kvviz.model.loaders import load_model; i = load_model('gpt2').info; print(i.kind, i.spec, i.n_params)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"},
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pretrained", "gpt2", str(loading.bundled_info().n_params)]


# --- What a load may cost (kvviz.model.load_cost), the missing-tokenizer folder, one load at a time ---------------


@pytest.mark.model
def test_gpt2_param_count_equals_real_models_of_several_shapes(bundled):
    """The closed form, against transformers' own GPT2LMHeadModel (tied, untied, with n_inner)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from kvviz.model import load_cost

    cfg = json.loads((loading.BUNDLED_DIR / "config.json").read_text())
    assert load_cost.params_from_config(cfg) == bundled.info.n_params
    for extra in ({"tie_word_embeddings": False}, {"n_inner": 40}):
        config = GPT2Config(n_layer=3, n_head=2, n_embd=16, n_positions=32, vocab_size=97, **extra)
        real = GPT2LMHeadModel(config)
        assert load_cost.params_from_config(config.to_dict()) == sum(p.numel() for p in real.parameters()), extra
    assert load_cost.gpt2_param_count(6, 768, 1024, 50257) == 81_912_576  # distilgpt2 (see the test above)


@pytest.mark.model
def test_cap_refuses_an_oversize_config_before_reading_weights(tmp_path):
    """gpt2-xl's config.json and no weights at all: refused by the cap, from the config alone."""
    from transformers import GPT2Config

    from kvviz.model import loaders

    folder = tmp_path / "gpt2-xl-config-only"
    GPT2Config(**GPT2_FAMILY["gpt2-xl"].gpt2_config()).save_pretrained(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
    cap = loading.LoadCap(200_000_000)
    with pytest.raises(loading.ModelLoadError, match=r"too large.*config\.json says 1,557,611,200 parameters"):
        loaders.load_model(str(folder), cap=cap)
    with pytest.raises(loading.ModelLoadError, match="no model.safetensors"):  # without a cap: the real problem
        loaders.load_model(str(folder))


@pytest.mark.model
def test_cap_reads_the_safetensors_header_not_the_weights(tmp_path):
    """A small config whose safetensors header claims a 300M-element tensor and holds no data: refused
    by the header's count, and the cap is stated; the bundled copy itself loads under a cap it fits."""
    from kvviz.model import loaders

    folder = model_folder(tmp_path / "lying")
    header = json.dumps({"wte.weight": {"dtype": "F32", "shape": [300_000, 1000], "data_offsets": [0, 1_200_000_000]}})
    raw = header.encode()
    (folder / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(
        loading.ModelLoadError, match=r"safetensors header says 300,000,000 parameters.*at most 200,000,000"
    ):
        loaders.load_model(str(folder), cap=loading.LoadCap(200_000_000))
    fits = model_folder(tmp_path / "fits")
    n_params = loading.bundled_info().n_params
    assert loaders.load_model(str(fits), cap=loading.LoadCap(n_params)).info.n_params == n_params
    with pytest.raises(loading.ModelLoadError, match="too large"):
        loaders.load_model(str(fits), cap=loading.LoadCap(n_params - 1))


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_cap_refuses_a_random_shape_before_building_it():
    from kvviz.model import loaders

    began = time.perf_counter()
    with pytest.raises(loading.ModelLoadError, match=r"gpt2-xl shape says 1,557,611,200 parameters"):
        loaders.load_model("random:gpt2-xl", cap=loading.LoadCap(200_000_000))
    assert time.perf_counter() - began < 1  # building 1.5 B random parameters takes minutes; nothing was built


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_folder_without_tokenizer_files_is_a_one_line_error(tmp_path):
    """transformers 5 would build an EMPTY tokenizer from such a folder and the app would fail later."""
    from kvviz.model import loaders

    folder = model_folder(tmp_path / "no-tokenizer", with_tokenizer=False)
    with pytest.raises(loading.ModelLoadError, match="no tokenizer files") as caught:
        loaders.load_model(str(folder))
    assert "\n" not in str(caught.value)


@pytest.mark.model
def test_one_load_at_a_time_the_second_waits_for_the_first():
    """A random 124M-parameter GPT-2 takes seconds to build; a bundled load started meanwhile (0.1 s on
    its own) returns only after it, and the busy time is reported while it runs."""
    from kvviz.model import loaders

    assert loading.load_busy_for_s() is None
    first_done: list[float] = []
    first = threading.Thread(target=lambda: (loaders.load_model("random:gpt2"), first_done.append(time.perf_counter())))
    first.start()
    while loading.load_busy_for_s() is None and first.is_alive():
        time.sleep(0.001)
    assert loading.load_busy_for_s() is not None and not first_done
    loaders.load_model("bundled")
    second_done = time.perf_counter()
    first.join()
    assert first_done and first_done[0] <= second_done
    assert loading.load_busy_for_s() is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"abc", "too short to be a safetensors file"),
        ((2**40).to_bytes(8, "little"), "declares a 1,099,511,627,776-byte header"),
        ((5).to_bytes(8, "little") + b"[1,2]", "no valid safetensors header"),
        ((41).to_bytes(8, "little") + b'{"w": {"dtype": "F32", "shape": [-1, 2]}}', "invalid shape"),
    ],
)
@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_corrupt_safetensors_headers_are_one_line_errors_even_without_a_cap(tmp_path, content, reason):
    from kvviz.model import loaders

    folder = model_folder(tmp_path / "corrupt")
    (folder / "model.safetensors").write_bytes(content)
    with pytest.raises(loading.ModelLoadError, match=reason) as caught:
        loaders.load_model(str(folder))
    assert "\n" not in str(caught.value)
