"""A model of mixed layers in `python -m kvviz memory` and on the Memory budget page: the per-layer kinds and totals,
the two parts (K/V that grows, state that does not), the crossover, what the old every-layer-attention figure said,
and the refusals. The presets are their published config.json files, read through transformers' own classes."""

from __future__ import annotations

import json

import pytest

from kvviz.cli.memory import main as memory_cli
from kvviz.memory import units
from kvviz.memory.presets import LAYERED_PRESETS
from support.pages import app_test

QWEN3_NEXT = "qwen3-next-80b-a3b"


def cli_json(capsys, *argv: str) -> dict:
    assert memory_cli(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.model
def test_the_cli_carries_qwen3_next_layer_by_layer(capsys):
    out = cli_json(capsys, "--preset", QWEN3_NEXT, "--context", "131072", "--json")
    kinds = [layer["kind"] for layer in out["layers"]]
    assert kinds == (["state"] * 3 + ["full"]) * 12  # 1 attention layer in 4
    assert out["kinds"]["full"] == {"layers": 12, "bytes_per_token": 12 * 2 * 2 * 256 * 2, "fixed_bytes": 0}
    # each Gated DeltaNet layer: conv (2*16*128 + 32*128) x 4 in bf16, recurrent 32 x 128 x 128 in float32
    per_state_layer = (2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4
    assert out["kinds"]["state"]["fixed_bytes"] == 36 * per_state_layer == out["fixed_bytes"] == 77_856_768
    assert out["total_bytes"] == 131072 * 24576 + 77_856_768 == sum(layer["bytes"] for layer in out["layers"])
    assert out["all_full_attention_bytes"] == 4 * 131072 * 24576
    assert out["state_dominates_until_tokens"] == 3168  # 77,856,768 / 24,576 = 3,168 exactly
    assert any("vLLM" in note and "mamba_utils.py" in note for note in out["notes"])


@pytest.mark.model
def test_the_cli_counts_a_pattern_by_hand_and_refuses_a_word_it_does_not_know(capsys):
    argv = [
        "--layers",
        "48",
        "--heads",
        "16",
        "--kv-heads",
        "2",
        "--head-dim",
        "256",
        "--dtype",
        "bf16",
        "--linear-heads",
        "32",
        "--linear-head-dim",
        "128",
        "--context",
        "1000",
        "--json",
    ]
    out = cli_json(capsys, *argv, "--pattern", "3 linear : 1 full")
    assert [layer["kind"] for layer in out["layers"]][:4] == ["state", "state", "state", "full"]
    assert out["bytes_per_token"] == 12 * 2048
    assert memory_cli([*argv, "--pattern", "3 retention : 1 full"]) == 2
    err = capsys.readouterr().err
    assert "retention" in err and err.count("\n") == 1


@pytest.mark.model
def test_a_layered_presets_bytes_are_its_published_configs(capsys, tmp_path):
    """Importing each preset's published config.json (as a file, through --config) gives the preset's own bytes."""
    for name, preset in LAYERED_PRESETS.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(preset.transformers_config()))
        by_file = cli_json(capsys, "--config", str(path), "--context", "8192", "--json")
        by_preset = cli_json(capsys, "--preset", name, "--context", "8192", "--json")
        assert by_file.get("total_bytes") == by_preset.get("total_bytes"), name
        assert [x["bytes"] for x in by_file["layers"]] == [x["bytes"] for x in by_preset["layers"]], name


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.app
@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_page_shows_qwen3_next_in_two_parts_with_its_layer_strip(lang):
    at = app_test("pages/memory_budget.py", lang=lang, query={"mem_preset": QWEN3_NEXT, "mem_context": "131072"})
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [] or all(
        "80,000,000,000" in e.value or "160,000,000,000" in e.value for e in at.error
    )  # 80B bf16 weights fill an 80 GiB A100
    shown = list(metrics(at).values())
    assert shown[:3] == ["24 KiB", "74.25 MiB", "3.073 GiB"]
    assert at.number_input(key="mem_layers").disabled  # the layer list answers, not the form
    text = " ".join(m.value for m in at.markdown)
    assert "3,168" in text and "25.6%" in text  # the crossover; a quarter of the every-layer-attention figure
    charts = [str(c.proto) for c in at.get("plotly_chart")]
    assert len(charts) == 2  # the two-part chart and the layer strip (the calculator's tabs all run)
    assert "mem_chart_parts" in charts[0] and "mem_chart_strip" in charts[1]
    assert len(at.table) == 1 and len(at.table[0].value) == 2  # two kinds: full attention, fixed state


@pytest.mark.app
def test_the_page_imports_a_jamba_config_layer_by_layer_and_a_uniform_preset_frees_the_form():
    config = dict(LAYERED_PRESETS["jamba-1-5-mini"].config)
    at = app_test("pages/memory_budget.py")
    at.run()
    at.text_area(key="mem_paste").set_value(json.dumps(config)).run()
    at.button(key="mem_import").click().run()
    assert not at.exception and "Imported" in at.success[0].value
    shown = metrics(at)
    assert shown["K/V per token (grows)"] == "16 KiB"  # 4 attention layers of 32: 4 x 2 x 8 x 128 x 2 B
    assert shown["Fixed state per sequence"] == units.short_bytes(28 * (8192 * 4 * 2 + 8192 * 16 * 4))
    at.selectbox(key="mem_preset").set_value("llama-3-8b").run()
    assert not at.exception and not at.number_input(key="mem_layers").disabled
    assert metrics(at)["Per token (all layers)"] == "128 KiB"
