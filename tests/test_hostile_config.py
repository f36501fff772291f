"""Hostile config.json input (the config-import and memory-CLI parts): one short line each, naming what
to change; no exception, no traceback, the earlier state kept.

Three surfaces, each with hand-picked cases and property-based ones (hypothesis):
  the library   kvviz.memory.config_import.parse_hf_config: returns a config or raises MemoryInputError, nothing else
  the CLI       python -m kvviz memory --config FILE [...]: exit 0 with a table, or exit 2 with one stderr line
  the page      the Memory budget page's "Import a Hugging Face config.json" (AppTest): one message, and on a
                refusal the form keeps the values it had
Each property test prints how many inputs it tried (pytest -s shows it).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz import i18n, memory
from kvviz.cli.memory import main as memory_cli
from kvviz.memory import MemoryInputError, config_import
from support.markdown_text import shown
from support.pages import REPO, app_test

MAX_MESSAGE = 400  # characters: one sentence, with at most a quoted reason from transformers

# ----- what a hostile student types -------------------------------------------------------------------------
MODEL_TYPES = [
    "llama",
    "qwen2",
    "mistral",
    "gemma3",
    "gemma3_text",
    "t5",
    "bart",
    "deepseek_v2",
    "deepseek_v3",
    "falcon",
    "gpt2",
    "llava",
    "mixtral",
    "bert",
    "mamba",
    "nonexistent",
    "",
    None,
    5,
    ["llama"],
]
FIELDS = [
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_size",
    "sliding_window",
    "sliding_window_pattern",
    "layer_types",
    "torch_dtype",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "use_sliding_window",
    "max_window_layers",
    "d_kv",
    "d_model",
    "num_layers",
    "num_heads",
    "decoder_layers",
    "decoder_attention_heads",
    "n_head",
    "n_layer",
    "n_embd",
    "new_decoder_architecture",
    "multi_query",
    "num_kv_heads",
    "is_encoder_decoder",
    "_name_or_path",
    "max_position_embeddings",
    "vocab_size",
    "intermediate_size",
    "text_config",
]
BIG_TEXT = "x" * 1_000_000
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 130),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, 4, 8, 32, 64, 128, 4096, 1e400]),
    st.text(max_size=30),
    st.sampled_from([BIG_TEXT, "x", "bfloat16", "float8_e4m3fn", "int4"]),
    st.lists(st.sampled_from(["sliding_attention", "full_attention", "chunked_attention", "", 3]), max_size=8),
    st.dictionaries(
        st.sampled_from(["model_type", "num_hidden_layers", "head_dim"]),
        st.one_of(st.none(), st.integers(-2, 64), st.text(max_size=8)),
        max_size=3,
    ),
)


REAL = [  # published configs (excerpts), each then given one or two hostile fields
    {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "torch_dtype": "bfloat16",
    },
    {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "sliding_window": 4096,
        "use_sliding_window": True,
        "max_window_layers": 21,
    },
    {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "torch_dtype": "bfloat16",
    },
    {"model_type": "t5", "d_model": 1024, "d_kv": 128, "num_heads": 32, "num_layers": 24},
    {
        "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 34, "sliding_window": 1024},
    },
    {"num_hidden_layers": 12, "num_attention_heads": 12, "hidden_size": 768},  # no model_type: read as written
]


def configs() -> st.SearchStrategy[dict]:
    fields = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)
    text_config = st.one_of(
        st.none(), st.text(max_size=10), fields.map(lambda d: {**d, "model_type": d.get("model_type", "llama")})
    )
    anything = st.builds(
        lambda mt, f, tc: {
            **({} if mt == "" else {"model_type": mt}),
            **f,
            **({} if tc is None else {"text_config": tc}),
        },
        st.sampled_from(MODEL_TYPES),
        fields,
        text_config,
    )
    one_bad_field = st.builds(
        lambda base, bad: {**base, **bad},
        st.sampled_from(REAL),
        st.dictionaries(st.sampled_from(FIELDS), values, min_size=1, max_size=2),
    )
    return st.one_of(anything, one_bad_field)


raw_texts = st.one_of(
    st.text(max_size=200),  # not JSON at all, mostly
    st.sampled_from(
        [
            "",
            "{}",
            "[]",
            "null",
            "3",
            '"config"',
            "{" * 5000,
            '{"a": ' + "9" * 5000 + "}",
            '{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}",
            "\x00\x01",
            "NaN",
        ]
    ),
)


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and len(message) <= MAX_MESSAGE, message[:500]
    assert not message.rstrip().endswith(":"), message  # a message that stops at the colon says nothing
    for python_text in (
        "Traceback",
        "unsupported operand",
        "object has no attribute",
        "sys.set_int_max_str_digits",
        "division or modulo",
        "invalid literal",
    ):
        assert python_text not in message, message


def parse_outcome(text: str) -> tuple[str, object]:
    """('read', ImportedConfig) or ('refused', message): any other exception fails the test."""
    try:
        return "read", config_import.parse_hf_config(text)
    except MemoryInputError as exc:
        assert_one_line(str(exc))
        return "refused", str(exc)


def check_read(imported: config_import.ImportedConfig) -> None:
    """What an accepted config may show: a short name, short used values, a config (or, for a model without attention
    such as Mamba, a layer list) the calculator can count."""
    if imported.config is None:  # no attention layer: the layer list is the whole answer
        assert imported.layers is not None and len(imported.layers.name) <= config_import.MAX_NAME_CHARS
        assert imported.layers.bytes_at(100) >= 0 and not imported.layers.attention_layers()
    else:
        assert len(imported.config.name) <= config_import.MAX_NAME_CHARS
        assert memory.kv_bytes(imported.config, 100) >= 0
    if imported.layers is not None:
        assert imported.layers.bytes_at(100) >= 0 and len(imported.layers.name) <= config_import.MAX_NAME_CHARS
    assert all(len(memory.short_repr(i18n.shown(v), 10_000)) <= 80 for v in imported.used.values())
    assert all(len(m.english) <= MAX_MESSAGE for m in imported.missing)
    assert imported.max_context is None or 1 <= imported.max_context <= memory.LIMITS["context_len"]


# ----- the library: the hand-picked cases, then the property ----------------------------------------------
LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}


@pytest.mark.model
@pytest.mark.parametrize(
    "cfg, says",
    [
        ({"model_type": "deepseek_v3", "qk_rope_head_dim": "x"}, "qk_rope_head_dim must be a whole number"),
        (
            {"num_hidden_layers": 2, "num_attention_heads": 2, "kv_lora_rank": 4, "qk_rope_head_dim": "x"},
            "qk_rope_head_dim must be a whole number",
        ),  # no model_type: not a TypeError ('int' + 'str')
        (
            {**LLAMA, "hidden_size": "abc"},
            "hidden_size must be a whole number",
        ),  # not a sentence cut at "...'hidden_size':"
        ({"model_type": "llava", "text_config": {"model_type": "bogus"}}, "text_config's model_type 'bogus'"),
        ({**LLAMA, "head_dim": 0}, "head_dim must be a whole number from 1"),  # not silently 128, "Missing: nothing"
        ({"model_type": "t5", "d_kv": 0}, "d_kv must be a whole number from 1"),  # not silently 64
        (
            {
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "hidden_size": 4096,
                "sliding_window": 4,
                "layer_types": ["sliding_attention", "full_attention"],
            },
            "layer_types has 2 entries for 32 layers",
        ),
        ({**LLAMA, "num_key_value_heads": -1}, "num_key_value_heads must be a whole number from 1"),
        ({**LLAMA, "torch_dtype": "bogus"}, "torch_dtype 'bogus' is not a torch dtype name"),  # not Python's words
        ({**LLAMA, "torch_dtype": "float64"}, None),  # a torch dtype, but no cache format: said to be replaced
    ],
)
def test_the_issues_configs_get_one_sentence(cfg, says):
    outcome, result = parse_outcome(json.dumps(cfg))
    if says is None:
        assert outcome == "read" and any("not a cache dtype" in m.english for m in result.missing)
    else:
        assert outcome == "refused" and says in result, result


@pytest.mark.model
def test_a_megabyte_name_is_cut_and_a_megabyte_value_summarised():
    imported = config_import.parse_hf_config({**LLAMA, "_name_or_path": BIG_TEXT})
    assert imported.config.name == "x" * (config_import.MAX_NAME_CHARS - 1) + "…"
    as_written = config_import.parse_hf_config({"n_layer": 2, "n_head": 2, "n_embd": 8, "torch_dtype": BIG_TEXT})
    assert len(str(as_written.used["torch_dtype"])) < 80 and all(len(m.english) < 200 for m in as_written.missing)
    outcome, message = parse_outcome(json.dumps({**LLAMA, "torch_dtype": BIG_TEXT}))
    assert outcome == "refused" and "is not a torch dtype name" in message
    outcome, message = parse_outcome(json.dumps({**LLAMA, "num_hidden_layers": BIG_TEXT}))
    assert outcome == "refused" and "1,000,002 characters" in message


@pytest.mark.model
def test_unknown_text_config_type_is_one_sentence_not_every_model_type():
    outcome, message = parse_outcome(json.dumps({"model_type": "gemma3", "text_config": {"model_type": "zzz"}}))
    assert outcome == "refused" and len(message) < 200 and "gemma3_text" in message  # not all 11,718 characters of them


def test_a_5000_digit_number_is_named_not_pythons_digit_limit():
    outcome, message = parse_outcome('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}")
    assert outcome == "refused" and "thousands of digits" in message


@pytest.mark.model
def test_any_config_is_read_or_refused_in_one_line():
    tried: Counter = Counter()

    @settings(max_examples=700, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(configs())
    def check(cfg: dict) -> None:
        outcome, result = parse_outcome(json.dumps(cfg))
        if outcome == "read":
            check_read(result)
        tried[outcome] += 1

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(raw_texts)
    def check_text(text: str) -> None:
        tried[parse_outcome(text)[0]] += 1

    check()
    check_text()
    print(
        f"\nconfig import (library): {sum(tried.values())} inputs tried: {tried['read']} read, "
        f"{tried['refused']} refused in one line"
    )
    assert tried["read"] >= 10 and tried["refused"] >= 100  # both outcomes happen: the sample is not degenerate


# ----- the CLI ------------------------------------------------------------------------------------------------
def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = memory_cli(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_cli_outcome(rc: int, out: str, err: str) -> None:
    assert rc in (0, 2) and "Traceback" not in out + err
    if rc == 2:
        assert err.count("\n") == 1 and err.startswith("kvviz memory: ") and not out
        assert_one_line(err.strip())
    else:
        assert "total" in out and not err


@pytest.mark.slow
def test_cli_refuses_dev_zero_after_a_capped_read_and_the_mla_file_in_one_line():
    """/dev/zero is refused after a capped read (read whole, it ends in a MemoryError after 13.7 s); the malformed
    MLA file gets one line, not a TypeError. Run as a student would, in a fresh process."""
    for path, says in (
        ("/dev/zero", "not a regular file"),
        (None, "qk_rope_head_dim must be"),
    ):  # read only regular files
        if path is None:
            import tempfile

            path = Path(tempfile.mkdtemp()) / "config.json"
            path.write_text(json.dumps({"model_type": "deepseek_v3", "qk_rope_head_dim": "x"}))
        run = subprocess.run(
            [sys.executable, "-m", "kvviz", "memory", "--config", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert run.returncode == 2 and run.stderr.count("\n") == 1 and says in run.stderr, run.stderr[-500:]


@pytest.mark.model
def test_cli_any_config_file_and_arguments_exit_0_or_one_line(tmp_path, capsys):
    tried: Counter = Counter()
    path = tmp_path / "config.json"
    numbers = st.one_of(
        st.integers(-5, 10**6).map(str),
        st.sampled_from(["0", "-1", "1e3", "nan", "inf", "", "x", "9" * 5000, "1.5", " 7 "]),
    )
    extra = st.lists(
        st.sampled_from(
            ["--context", "--batch", "--encoder-len", "--dtype", "--quant-group", "--window", "--mla-rank"]
        ),
        max_size=3,
        unique=True,
    )

    @settings(max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(configs().map(json.dumps), raw_texts), extra, st.data())
    def check(text: str, flags: list[str], data) -> None:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        argv = ["--config", str(path)]
        for flag in flags:
            argv += [
                flag,
                data.draw(st.sampled_from(["fp8", "int4", "bf16", "q9", "x" * 300]) if flag == "--dtype" else numbers),
            ]
        rc, out, err = cli(argv, capsys)
        assert_cli_outcome(rc, out, err)
        tried["exit 0" if rc == 0 else "exit 2"] += 1

    check()
    for argv in (["--config", "/dev/zero"], ["--config", str(tmp_path)], ["--config", str(tmp_path / "none.json")]):
        rc, out, err = cli(argv, capsys)
        assert rc == 2
        assert_cli_outcome(rc, out, err)
        tried["exit 2"] += 1
    print(
        f"\nmemory CLI: {sum(tried.values())} inputs tried: {tried['exit 0']} exit 0, {tried['exit 2']} exit 2 "
        "with one line"
    )
    assert tried["exit 0"] >= 5 and tried["exit 2"] >= 50


@pytest.mark.model
def test_cli_encoder_decoder_total_says_what_it_covers(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "t5", "d_model": 1024, "d_kv": 128, "num_heads": 32, "num_layers": 24}))
    rc, out, _ = cli(["--config", str(path), "--context", "100", "--json"], capsys)
    result = json.loads(out)
    assert rc == 0 and result["cross_attention_bytes"] is None and "self-attention only" in result["total_covers"]
    assert result["total_bytes"] == result["self_attention_bytes"] == 100 * 786_432
    rc, out, _ = cli(["--config", str(path), "--context", "100"], capsys)
    assert "(decoder self-attention only)" in out and "give --encoder-len" in out


# ----- the page -----------------------------------------------------------------------------------------------
FORM = (
    "mem_layers",
    "mem_heads",
    "mem_kv_heads",
    "mem_head_dim",
    "mem_mla_rank",
    "mem_mla_rope",
    "mem_window",
    "mem_local",
    "mem_window_from",
)


@pytest.mark.app
@pytest.mark.usefixtures("fresh_streamlit_caches")
def test_page_import_any_config_one_message_and_the_form_kept_on_refusal():
    at = app_test("pages/memory_budget.py")
    at.run()
    tried: Counter = Counter()

    def import_text(text: str) -> None:
        at.text_area(key="mem_paste").set_value(text).run()
        at.button(key="mem_import").click().run()
        assert not at.exception, [e.value for e in at.exception]

    def form() -> dict:
        return {k: at.number_input(key=k).value for k in FORM} | {"mem_dtype": at.selectbox(key="mem_dtype").value}

    import_text(
        json.dumps(
            {
                "model_type": "qwen2",
                "num_hidden_layers": 28,
                "num_key_value_heads": 4,
                "sliding_window": 4096,
                "use_sliding_window": True,
                "max_window_layers": 21,
            }
        )
    )
    assert form()["mem_window_from"] == 21

    hostile = [
        json.dumps({"model_type": "deepseek_v3", "qk_rope_head_dim": "x"}),
        json.dumps({**LLAMA, "head_dim": 0}),
        json.dumps({"model_type": "t5", "d_kv": 0}),
        json.dumps({"model_type": "llava", "text_config": {"model_type": "bogus"}}),
        json.dumps({**LLAMA, "hidden_size": "abc"}),
        "{" * 5000,
        "not json",
    ]

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.sampled_from(hostile), configs().map(json.dumps)))
    def check(text: str) -> None:
        before = form()
        expected, result = parse_outcome(text)
        import_text(text)
        messages = [e.value for e in at.error] + [s.value for s in at.success]
        assert len(messages) == 1, messages  # one message: the import's report
        if expected == "refused":
            assert shown(at.error[0].value) == f"Not imported: {result.rstrip('.')}." and form() == before
        else:
            kv = result.config
            assert "Imported" in at.success[0].value
            if kv is None:  # no attention layer (Mamba): the form keeps its numbers, the layer list answers
                assert {k: v for k, v in form().items() if k != "mem_dtype"} == {
                    k: v for k, v in before.items() if k != "mem_dtype"
                }
            else:
                assert form()["mem_layers"] == kv.n_layer and form()["mem_head_dim"] == kv.head_dim
        tried[expected] += 1

    # the hand-picked cases every run, whatever hypothesis draws; and a model without attention, read (CI's draw of
    # {"model_type": "mamba"} found the check reading an attention config it does not have)
    for text in [*hostile, json.dumps({"model_type": "mamba"})]:
        check.hypothesis.inner_test(text)
    check()
    print(
        f"\nconfig import (page): {sum(tried.values())} inputs tried: {tried['read']} read, "
        f"{tried['refused']} refused with one message and the form kept"
    )
    assert tried["refused"] >= len(hostile)


# ----- a 100-byte config must not take the server's memory ----------------------------------------------------
RSS_BOUND_MIB = 64  # what an import may add to the process's peak memory while it is refused (the 30-M-label dict
#                     transformers would build is ~5 GiB; the one-billion-label one ~180 GB)
_TINY_LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
ALLOCATING = {  # name: (config.json, what the refusal says)
    "llama 3e7 labels": ({**_TINY_LLAMA, "num_labels": 30_000_000}, "num_labels = 30,000,000"),
    "llava text_config 3e7 labels": (
        {"model_type": "llava", "text_config": {**_TINY_LLAMA, "num_labels": 30_000_000}},
        "text_config.num_labels = 30,000,000",
    ),
    "t5 3e7 labels": (
        {"model_type": "t5", "num_layers": 2, "num_heads": 4, "d_model": 64, "d_kv": 16, "num_labels": 30_000_000},
        "num_labels = 30,000,000",
    ),
    "llama 1e9 labels": ({**_TINY_LLAMA, "num_labels": 1_000_000_000}, "num_labels = 1,000,000,000"),
    "gemma3 vision_config layers": (
        {"model_type": "gemma3", "vision_config": {"num_hidden_layers": 10**9}},
        "vision_config.num_hidden_layers = 1,000,000,000",
    ),
    # a count inside a list that gpt_neo's config class loops over: no name-based check knows it; the bounded
    # child process does (its address space is capped, the server's memory is untouched)
    "gpt_neo attention_types count": (
        {"model_type": "gpt_neo", "num_layers": 2, "attention_types": [[["global", "local"], 200_000_000]]},
        "MiB of memory",
    ),
}
_MEASURE = r"""
import json, resource, sys
def status():
    with open("/proc/self/status") as fh:
        return {l.split(":")[0]: int(l.split()[1]) // 1024 for l in fh if l.startswith(("VmRSS", "VmHWM", "VmSize"))}
from kvviz.memory import config_import, MemoryInputError
config_import.parse_hf_config({"model_type": "llama"})  # transformers and torch imported, warm
# a guard for the machine, not the bound under test: an unbounded import would take every GiB there is
limit = (status()["VmSize"] + 3072) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
out = {}
for name, cfg in json.loads(sys.argv[1]).items():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the peak (VmHWM) restarts from here
    before = status()
    try:
        config_import.parse_hf_config(cfg)
        outcome = "read"
    except MemoryInputError as exc:
        outcome = str(exc)
    except BaseException as exc:
        outcome = "escaped: " + type(exc).__name__
    after = status()
    out[name] = {"outcome": outcome, "rss_before_mib": before["VmRSS"],
                 "peak_growth_mib": after["VmHWM"] - before["VmRSS"], "rss_growth_mib": after["VmRSS"] - before["VmRSS"]}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_allocating_configs_are_refused_within_a_memory_bound():
    """100-byte configs (num_labels in a llama, in a LLaVA text_config, in a t5; 1e9 labels; a layer
    count in a vision sub-config; a count inside gpt_neo's attention_types list) are refused in one line, and the
    importing process's peak memory (VmHWM, /proc/self/status) grows by less than RSS_BOUND_MIB while they are.
    Measured in a fresh process: the peak is that process's own, not what earlier tests left."""
    run = subprocess.run(
        [sys.executable, "-c", _MEASURE, json.dumps({k: v[0] for k, v in ALLOCATING.items()})],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    for name, (_cfg, says) in ALLOCATING.items():
        m = measured[name]
        print(f"\n{name}: {m}")
        assert says in m["outcome"], (name, m["outcome"])
        assert_one_line(m["outcome"])
        assert m["peak_growth_mib"] < RSS_BOUND_MIB and m["rss_growth_mib"] < RSS_BOUND_MIB, (name, m)


@pytest.mark.model
def test_a_config_build_past_its_time_limit_is_refused_and_the_process_goes_on(monkeypatch):
    """The bounded child is killed past BUILD_SECONDS and the import refused in one line; the next import works."""
    from kvviz.memory import config_build

    monkeypatch.setattr(config_build, "BUILD_SECONDS", 0.0)
    outcome, message = parse_outcome(json.dumps(_TINY_LLAMA))
    assert outcome == "refused" and "took more than 0 s" in message
    monkeypatch.undo()
    assert parse_outcome(json.dumps(_TINY_LLAMA))[0] == "read"


def _status_mib(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith(field + ":"))


HOSTILE_FIELDS = [
    *FIELDS,
    "num_labels",
    "id2label",
    "label2id",
    "attention_types",
    "depths",
    "num_mtp_layers",
    "first_k_dense_replace",
    "per_layer_config",
    "vision_config",
    "audio_config",
    "num_kv_shared_layers",
    "global_head_dim",
    "num_global_key_value_heads",
    "rope_parameters",
    "eos_token_id",
]
HOSTILE_TYPES = [
    "llama",
    "llava",
    "t5",
    "gemma4",
    "gemma4_text",
    "neomme",
    "dots3_note",
    "gpt_neo",
    "gemma3",
    "qwen2",
    "deepseek_v3",
    None,
]


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"text_config": value, "num_hidden_layers": 2}
    return value


hostile_values = st.one_of(
    st.sampled_from([10**9, 3 * 10**7, 2**63, 2**64, -(2**63) - 1, 10**100, 10**4000, 0, -1]),  # huge ints
    st.integers(0, 4000).map(lambda n: "0" * n + "1"),  # zero-padded digit strings
    st.integers(1, 60).map(_nested),  # nested dicts, past MAX_NESTING
    st.sampled_from(["x" * 1_000_000, "\x1b]0;PWNED\x07\x1b[2J", "\u202eevil", "\x00" * 1000, "𝟘" * 10_000]),
    st.sampled_from([[0] * 1_000_000, ["sliding_attention"] * 500_000, [[["global"], 10**8]], [10**9] * 3]),
    st.sampled_from([{str(i): f"L{i}" for i in range(200_000)}, {"0" * 5000 + "1": "x"}, {"5": {"head_dim": 512}}]),
)


@pytest.mark.model
def test_hostile_field_values_are_read_or_refused_with_bounded_memory():
    """Property (derandomised): any known model type, any hostile value in any field (allocating ones included):
    parse_hf_config returns or raises MemoryInputError in one line, nothing else, and the process's peak memory
    stays within a bound while it does."""
    tried: Counter = Counter()
    for model_type in HOSTILE_TYPES:  # transformers, torch and each config module imported before measuring
        with contextlib.suppress(MemoryInputError):
            config_import.parse_hf_config({"model_type": model_type, "text_config": {"model_type": "llama"}})
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pytest.skip("this kernel does not let a process reset its peak memory (/proc/self/clear_refs)")
    rss_before = _status_mib("VmRSS")

    @settings(max_examples=250, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(
        st.sampled_from(HOSTILE_TYPES),
        st.dictionaries(st.sampled_from(HOSTILE_FIELDS), hostile_values, min_size=1, max_size=3),
        st.booleans(),
    )
    def check(model_type, fields, nest) -> None:
        cfg = {**({} if model_type is None else {"model_type": model_type}), **_TINY_LLAMA, **fields}
        if model_type is None:
            del cfg["model_type"]
        if nest:  # the same fields inside a LLaVA's text_config
            cfg = {"model_type": "llava", "text_config": {**cfg, "model_type": "llama"}}
        try:
            config_import.parse_hf_config(cfg)
            tried["read"] += 1
        except MemoryInputError as exc:
            assert_one_line(str(exc))
            tried["refused"] += 1

    check()
    peak = _status_mib("VmHWM") - rss_before
    print(
        f"\nhostile field values: {sum(tried.values())} configs: {tried['read']} read, {tried['refused']} refused in "
        f"one line; peak memory grew by {peak} MiB"
    )
    assert tried["refused"] >= 100 and tried["read"] >= 1
    assert peak < RSS_BOUND_MIB, peak


@pytest.mark.app
@pytest.mark.usefixtures("fresh_streamlit_caches")
def test_page_refuses_a_label_table_config_without_the_servers_memory_growing():
    """The Memory budget page (AppTest runs it in this process, as the server would): a label-table config with 3e6
    labels (~550 MiB of dict were it built, enough to fail the bound without straining a shared machine), is
    refused in one message; the process's peak memory grows by less than RSS_BOUND_MIB meanwhile."""

    at = app_test("pages/memory_budget.py")
    at.run()
    at.text_area(key="mem_paste").set_value(json.dumps(_TINY_LLAMA)).run()
    at.button(key="mem_import").click().run()  # warm: transformers, torch and the llama config module imported
    assert at.success and not at.error
    layers_before = at.number_input(key="mem_layers").value
    at.text_area(key="mem_paste").set_value(
        json.dumps({**_TINY_LLAMA, "num_hidden_layers": 5, "num_labels": 3_000_000})
    ).run()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    rss_before = _status_mib("VmRSS")
    at.button(key="mem_import").click().run()
    peak_growth = _status_mib("VmHWM") - rss_before
    print(f"\npage import of 3e6 labels: RSS before {rss_before} MiB, peak growth {peak_growth} MiB")
    assert not at.exception and [shown(e.value) for e in at.error] == [
        "Not imported: num_labels = 3,000,000: transformers builds a table with one entry per class label, and "
        "labels do not change the KV cache; kvviz reads at most 100,000 labels: remove the field."
    ]
    assert at.number_input(key="mem_layers").value == layers_before  # the form kept
    assert peak_growth < RSS_BOUND_MIB, peak_growth


@pytest.mark.model
def test_a_value_the_config_class_trips_on_gets_a_plain_sentence(tmp_path, capsys):
    """transformers' gemma3_text class computes with sliding_window_pattern, so null
    gets a plain sentence, not Python's own words ("unsupported operand type(s) for %: 'int' and 'NoneType'")."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3_text", "sliding_window_pattern": None}))
    rc, out, err = cli(["--config", str(path)], capsys)
    assert_cli_outcome(rc, out, err)
    assert rc == 2 and "its values do not fit together (TypeError)" in err, err
