"""AppTest of the "Count the work" and "Memory budget" pages: they render, react to inputs, restore URL state,
and turn bad input into messages. The pages run standalone (no app.py) on the real bundled model."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import memory, ops
from kvviz.memory import dtypes, units
from kvviz.memory.presets import get_preset
from support.markdown_text import shown
from support.pages import PAGES_DIR, app_test

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")


def page(name: str) -> AppTest:
    return app_test(f"pages/{name}.py")


def open_tab(at: AppTest, key: str, label: str) -> None:
    """Click a tab (tabs bound to the URL are lazy: only the open one runs)."""
    at.session_state[key] = label
    at.run()
    assert not at.exception


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.app
def test_memory_page_renders_reacts_and_writes_the_url():
    at = page("memory_budget")
    at.run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Memory budget"
    shown = metrics(at)
    assert shown["Per token (all layers)"] == "128 KiB"  # Llama-3-8B bf16, the default preset
    assert shown["Total: 4,096 tokens x batch 1"] == "512 MiB"
    assert "mem_preset" not in at.query_params  # bind="query-params" leaves defaults out of the link
    open_tab(at, "mem_tab", "Textbook figures")
    table = at.table[0].value
    wrong = table[(table["model"] == "llama-3-70b") & (table["tokens"] == "4,096") & (table["verdict"] == "wrong")]
    assert len(wrong) == 1  # the printed 5 GB, flagged with its arithmetic
    assert "1,342,177,280 B" in wrong.iloc[0]["exact"] + wrong.iloc[0]["why"] and "4x" in wrong.iloc[0]["why"]

    at.number_input(key="mem_context").set_value(8192).run()
    assert metrics(at)["Total: 8,192 tokens x batch 1"] == "1 GiB"
    at.selectbox(key="mem_dtype").set_value("fp32").run()
    assert metrics(at)["Per token (all layers)"] == "256 KiB"
    at.selectbox(key="mem_preset").set_value("gemma-3-4b").run()  # the preset fills the form
    assert at.number_input(key="mem_layers").value == 34 and at.number_input(key="mem_window").value == 1024
    open_tab(at, "mem_tab", "Per layer")
    assert any("Per layer" in str(c.proto) for c in at.get("plotly_chart"))  # layers differ: the per-layer chart
    at.number_input(key="mem_kv_heads").set_value(3).run()  # 3 does not divide 8
    assert not at.exception and "must divide" in at.error[0].value
    at.number_input(key="mem_kv_heads").set_value(4).run()
    at.number_input(key="mem_hidden").set_value(2050).run()  # 2050 / 8 heads is not whole
    assert not at.exception and "not a multiple" in at.error[0].value
    at.number_input(key="mem_hidden").set_value(2048).run()  # head dim 256 again, from the hidden size
    assert not at.error and metrics(at)["Per token, one layer"] == "4 KiB"

    # the real cache of the loaded model equals the calculator (a link straight to that tab)
    at = page("memory_budget")
    at.query_params["mem_tab"] = "The loaded model"
    at.run()
    assert at.success and "the tensors hold" in at.success[-1].value
    real = metrics(at)["Real DynamicCache tensors"]
    assert metrics(at)[next(k for k in metrics(at) if k.startswith("Calculator at"))] == real


@pytest.mark.app
def test_memory_page_restores_state_from_the_url():
    at = page("memory_budget")
    at.query_params.update(
        {
            "mem_preset": "gpt2",
            "mem_layers": "12",
            "mem_heads": "12",
            "mem_kv_heads": "12",
            "mem_head_dim": "64",
            "mem_dtype": "fp32",
            "mem_context": "1024",
            "mem_batch": "2",
            "mem_compare": ["llama-3-8b", "gemma-3-4b"],
        }
    )  # a multiselect's link repeats the key
    at.run()
    assert not at.exception
    shown = metrics(at)
    assert shown["Per token (all layers)"] == "72 KiB"  # 73,728 B
    assert shown["Total: 1,024 tokens x batch 2"] == "144 MiB"
    assert at.multiselect(key="mem_compare").value == ["llama-3-8b", "gemma-3-4b"]


@pytest.mark.app
def test_memory_page_refuses_bad_url_values_with_a_notice():
    at = page("memory_budget")
    at.query_params.update({"mem_layers": "nan", "mem_context": "-5", "mem_preset": "llama-9", "mem_batch": "1e99"})
    at.run()
    assert not at.exception
    assert len(at.warning) >= 4 and all("Ignored" in w.value for w in at.warning[:4])
    assert metrics(at)["Per token (all layers)"] == "128 KiB"  # defaults


@pytest.mark.app
def test_memory_page_imports_a_config_json():
    at = page("memory_budget")
    at.run()
    cfg = {
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "hidden_size": 3584,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 32768,
    }
    at.text_area(key="mem_paste").set_value(json.dumps(cfg)).run()
    at.button(key="mem_import").click().run()
    assert not at.exception and "Imported" in at.success[0].value and "head_dim" in shown(at.success[0].value)
    assert metrics(at)["Per token (all layers)"] == units.short_bytes(get_preset("qwen2.5-7b").kv.bytes_per_token)
    assert at.query_params["mem_layers"] == "28" and at.query_params["mem_kv_heads"] == "4"  # the link carries it
    at.text_area(key="mem_paste").set_value('{"recipe": "pancakes"}').run()
    at.button(key="mem_import").click().run()
    assert "does not look like a transformer" in at.error[0].value


@pytest.mark.app
def test_ops_page_renders_reacts_and_restores_url():
    from kvviz.model.loaders import load_model

    at = page("attention_ops")
    at.run()
    assert not at.exception and not at.error and at.title[0].value == "Count the work"
    info = load_model("bundled").info
    cached, uncached = ops.generation_totals(info.ops_shape(), 16, 200, lm_head_all_positions=False)
    assert metrics(at)["Without / with"] == f"{uncached.total_ops / cached.total_ops:,.1f}x"
    before = metrics(at)["Without cache (ops)"]
    at.number_input(key="ops_new").set_value(300).run()
    assert metrics(at)["Without cache (ops)"] != before
    assert at.warning and "context limit of 256" in at.warning[0].value  # 16 + 300 - 1 > 256 positions
    at.toggle(key="ops_flops").set_value(True).run()
    assert "Without cache (FLOPs)" in metrics(at)
    open_tab(at, "ops_tab", "The '500x' claim")
    claim = [df for df in at.dataframe if "~500x?" in df.value.columns]
    assert claim and list(claim[0].value["~500x?"]).count("yes") >= 1
    at.selectbox(key="ops_model").set_value("custom").run()
    at.number_input(key="ops_kv_heads").set_value(5).run()
    assert not at.exception and "must divide" in at.error[0].value

    shared = page("attention_ops")
    shared.query_params.update({"ops_model": "llama-3-8b", "ops_prompt": "1", "ops_new": "1000", "ops_lm": "last"})
    shared.run()
    shape = get_preset("llama-3-8b").shape
    c, u = ops.generation_totals(shape, 1, 1000, lm_head_all_positions=False)
    assert not shared.exception and metrics(shared)["Without / with"] == f"{u.total_ops / c.total_ops:,.1f}x"
    assert shared.selectbox(key="ops_model").value == "llama-3-8b"


@pytest.mark.slow
def test_first_views_import_no_torch():
    """Count the work and Memory budget render their first view without torch (a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "import sys; from streamlit.testing.v1 import AppTest\n"
        "for name in ('attention_ops', 'memory_budget'):\n"
        f"    at = AppTest.from_file({str(PAGES_DIR)!r} + '/' + name + '.py', default_timeout=120); at.run()\n"
        "    assert not at.exception and at.metric, name\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False False"


@pytest.mark.app
def test_memory_page_explains_what_does_not_fit():
    at = page("memory_budget")
    at.query_params.update({"mem_preset": "deepseek-v3", "mem_tab": "What fits"})
    at.run()
    assert (
        not at.exception and "do not fit" in at.error[0].value and "nothing is left for the cache" in at.error[0].value
    )
    at = page("memory_budget")
    at.query_params.update({"mem_preset": "mistral-7b", "mem_tab": "What fits", "mem_gpu": "NVIDIA H100 80GB"})
    at.run()
    assert metrics(at)["Longest context, batch 1"] == "unbounded"
    assert any("only the window is stored" in i.value for i in at.info)
    assert any("79.65 GiB usable" in c.value for c in at.caption)
    at = page("memory_budget")
    at.query_params.update({"mem_preset": "llama-3-8b", "mem_context": "100000", "mem_tab": "Paged vs flat"})
    at.run()
    assert "exceeds llama-3-8b's own context window of 8,192" in at.warning[0].value
    assert any("shorter than the context" in w.value for w in at.warning)
    assert any("Paged blocks" in str(c.proto) for c in at.get("plotly_chart"))  # never an empty tab


def test_link_refusals_name_only_what_streamlit_dropped_or_changed():
    from kvviz.inputs.links import link_refusals

    linked = {
        "mem_layers": ["nan"],
        "mem_batch": ["8"],
        "mem_gpu": ["NVIDIA H100 80GB"],
        "mem_context": ["7.5"],
        "mem_compare": ["gpt2", "nope"],
        "ops_flops": ["true"],
    }
    now = {"mem_batch": ["8"], "mem_gpu": ["NVIDIA H100 80GB"], "mem_context": ["7"], "mem_compare": ["gpt2"]}
    shown = {
        "mem_layers": 32,
        "mem_batch": 8,
        "mem_gpu": "NVIDIA A100 80GB",
        "mem_context": 7,
        "mem_compare": ["gpt2"],
        "ops_flops": True,
    }
    out = link_refusals(linked, now, shown)
    # kept as linked (even when the widget was not drawn: mem_gpu in a closed tab) -> no message;
    # removed but equal to what is shown (a default) -> no message
    assert [m.split("`")[1] for m in out] == ["mem_layers=nan", "mem_context=7.5", "mem_compare=gpt2,nope"]
    assert "using 32" in out[0]


@pytest.mark.app
def test_pages_show_the_savings_sentence_and_the_quantized_residual():
    from kvviz.model.loaders import load_model

    at = page("attention_ops")
    at.run()
    shape = load_model("bundled").info.ops_shape()
    assert any(m.value == ops.savings_sentence(shape, 16, 200) for m in at.markdown)
    at = page("memory_budget")
    at.run()
    at.selectbox(key="mem_dtype").set_value("int4").run()
    residual = dtypes.transformers_quantized_defaults()["residual_length"]
    assert at.number_input(key="mem_residual").value == residual and not at.number_input(key="mem_residual").disabled
    llama = get_preset("llama-3-8b").kv
    with_window = memory.kv_bytes(replace(llama, dtype="int4", quant_residual_tokens=residual), 4096)
    assert with_window > memory.kv_bytes(replace(llama, dtype="int4"), 4096)
    assert metrics(at)["Total: 4,096 tokens x batch 1"] == units.short_bytes(with_window)
    at.number_input(key="mem_residual").set_value(0).run()
    assert metrics(at)["Total: 4,096 tokens x batch 1"] == units.short_bytes(
        memory.kv_bytes(replace(llama, dtype="int4"), 4096)
    )


@pytest.mark.app
def test_the_plans_memory_link_answers_when_the_cache_outweighs_the_weights():
    """The 45-minute plan's link opens Llama-3-8B at 8,192 tokens on What fits, and the page says at what
    context the cache outweighs the weights (integer-exact from the config: about 122,500 tokens at batch 1)."""
    at = page("memory_budget")
    at.query_params.update({"mem_preset": "llama-3-8b", "mem_context": "8192", "mem_tab": "What fits"})
    at.run()
    assert not at.exception and not at.error
    assert metrics(at)["Total: 8,192 tokens x batch 1"] == "1 GiB"
    preset = get_preset("llama-3-8b")
    weights = preset.n_params * 2  # bf16, the page's default weight dtype
    at_tokens = weights // memory.kv_bytes(preset.kv, 1) + 1
    assert memory.kv_bytes(preset.kv, at_tokens) > weights >= memory.kv_bytes(preset.kv, at_tokens - 1)
    assert 122_000 < at_tokens < 123_000
    said = " ".join(m.value for m in at.markdown)
    assert f"outweighs the weights from {at_tokens:,} tokens" in said and "past llama-3-8b's own context" in said


@pytest.mark.app
def test_only_a_link_that_names_a_tab_puts_the_tabs_above_the_inputs():
    """A link that opens the page on a tab (For teachers' What fits) draws the tab bar under the preset box, above
    the model's inputs, so the tab's answer and the preset box share the first screen; the order holds for the
    visit. An ordinary open, and a tab clicked on it, keep the inputs first (nothing moves under the reader)."""

    def walk(node):
        yield node
        for index in sorted(getattr(node, "children", {})):
            yield from walk(node.children[index])

    def tabs_first(at: AppTest) -> bool:
        nodes = list(walk(at.main))
        tabs = next(i for i, n in enumerate(nodes) if n.type == "tab")
        layers = next(i for i, n in enumerate(nodes) if getattr(n, "key", None) == "mem_layers")
        return tabs < layers

    at = page("memory_budget")
    at.run()
    assert not tabs_first(at)
    at.query_params["mem_tab"] = "What fits"  # a click on a tab: the browser's URL names it, the page was open
    open_tab(at, "mem_tab", "What fits")
    assert not tabs_first(at)
    linked = page("memory_budget")
    linked.query_params["mem_tab"] = "What fits"
    linked.run()
    assert tabs_first(linked)
    assert not any("scrollIntoView" in h.proto.body for h in linked.get("html"))  # the page opens at its top
    linked.run()
    assert tabs_first(linked)


@pytest.mark.app
def test_a_batch_that_does_not_fit_says_so():
    at = page("memory_budget")
    at.query_params.update(
        {"mem_preset": "llama-3-8b", "mem_context": "8192", "mem_batch": "500", "mem_tab": "What fits"}
    )
    at.run()
    assert not at.exception
    largest = metrics(at)["Largest batch at 8,192 tokens"]
    assert int(largest.replace(",", "")) < 500
    assert any(
        "Does not fit" in e.value and f"largest batch that fits at this context is {largest}" in e.value
        for e in at.error
    )


@pytest.mark.app
def test_every_tabs_inputs_stay_in_the_url_when_the_tab_changes():
    at = page("memory_budget")
    at.query_params.update(
        {"mem_compare": ["gpt2"], "mem_gpu": "NVIDIA H100 80GB", "mem_block": "32", "mem_tab": "What fits"}
    )
    at.run()
    for tab in ("Size vs context", "Paged vs flat", "Textbook figures", "What fits"):
        open_tab(at, "mem_tab", tab)
        kept = {k: at.query_params.get(k) for k in ("mem_compare", "mem_gpu", "mem_block")}
        assert kept == {"mem_compare": "gpt2", "mem_gpu": "NVIDIA H100 80GB", "mem_block": "32"}, (tab, kept)


def test_the_context_marker_label_stays_inside_the_chart():
    from kvviz.figures import memory as figs

    kv = get_preset("llama-3-8b").kv
    at_end = figs.size_vs_context_figure([kv], 8192, 1, mark_context=8192, max_contexts=[8192])
    assert at_end.layout.annotations[0].xanchor == "right"  # its text runs left of the line, inside the plot
    early = figs.size_vs_context_figure([kv], 8192, 1, mark_context=1000, max_contexts=[8192])
    assert early.layout.annotations[0].xanchor == "left"
