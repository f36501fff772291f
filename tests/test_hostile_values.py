"""Hostile input, at the boundary where text becomes a number (kvviz.inputs.query_values) and where files become a model
(kvviz.model.load_cost, kvviz.model.loading, kvviz.model.shared_mode): every refusal is one short sentence, never Python's own words.

Property-based: hypothesis throws arbitrary text, huge digit strings, floats written every way and unicode digits
at each validator; the counts of inputs tried are in INPUTS_TRIED (how much each property really tried).
"""

from __future__ import annotations

import ast
import json
import math
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.inputs import link_values, query_values
from kvviz.inputs.query_values import QueryValueError
from kvviz.model import load_cost, loading, shared_mode
from support.markdown_text import shown
from support.pages import REPO, app_test

EXAMPLES = 300  # per property below
PADDED = "0" * 5000 + "1"  # a digit count that skips the zeros sees "1", int() 5,001 characters (Python's 4,300 limit)
HOSTILE_TEXT = st.one_of(
    st.text(max_size=60),
    st.from_regex(r"[+-]?[0-9]{1,6000}", fullmatch=True),  # up to 6,000 digits: past Python's 4,300 limit
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "inf",
            "-inf",
            "Infinity",
            "nan",
            "NaN",
            "1e308",
            "1e309",
            "-3",
            "1.5",
            "0x10",
            "１２",
            "٣",
            " 7 ",
            "",
            "+",
            "--1",
            "1_000",
            "9" * 5000,
            "x" * 1_000_000,
            PADDED,
            "-" + PADDED,
        ]
    ),
    st.tuples(st.integers(0, 6000), st.integers(0, 10**6)).map(lambda t: "0" * t[0] + str(t[1])),  # zero-padded
)


def _one_sentence(message: str) -> None:
    assert "\n" not in message and len(message) < 240, message
    for raw in ("int_max_str_digits", "invalid literal", "could not convert", "Traceback", "OverflowError"):
        assert raw not in message, message


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(text=HOSTILE_TEXT, lo=st.integers(-1000, 1000), span=st.integers(0, 10**6))
def test_whole_number_takes_exactly_digit_strings_in_range(text, lo, span):
    hi = lo + span
    stripped = text.strip()
    expected = None
    if (
        stripped.isascii()
        and stripped.lstrip("+-").isdigit()
        and stripped.count("-") + stripped.count("+") <= 1
        and stripped[:1] in "+-0123456789"
        and len(stripped.lstrip("+-0")) < 12
        and len(stripped) <= query_values.MAX_NUMBER_CHARS
    ):
        expected = int(stripped.lstrip("+-").lstrip("0") or "0") * (-1 if stripped[0] == "-" else 1)
    try:
        got = query_values.whole_number(text, lo, hi, "steps")
    except QueryValueError as exc:
        _one_sentence(str(exc))
        assert expected is None or not lo <= expected <= hi
    else:
        assert got == expected and lo <= got <= hi


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(text=HOSTILE_TEXT)
def test_finite_number_refuses_nan_inf_and_words_in_one_sentence(text):
    try:
        value = query_values.finite_number(text, 0.0, 1.0, "--weight-decay")
    except QueryValueError as exc:
        _one_sentence(str(exc))
    else:
        assert math.isfinite(value) and 0.0 <= value <= 1.0


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(
    values=st.dictionaries(
        st.sampled_from(["mem_layers", "mem_batch", "ops_prompt", "other"]),
        st.lists(HOSTILE_TEXT, min_size=1, max_size=3),
        max_size=4,
    )
)
def test_link_numbers_refused_are_exactly_those_no_widget_may_parse(values):
    keys = ["mem_layers", "mem_batch", "ops_prompt"]
    refused = query_values.refused_link_numbers(values, keys)
    assert set(refused) <= set(keys) & set(values)
    for key, raw in values.items():
        if key not in keys:
            continue
        text = raw[0].strip()
        ok = (
            len(raw) == 1
            and re.fullmatch(r"[+-]?[0-9]+", text) is not None
            and len(text) <= query_values.MAX_NUMBER_CHARS
            and abs(int(text)) <= 10**15
        )
        assert (key in refused) != ok, (key, raw, refused)
        if key in refused:
            # the value is echoed in a code span: a backtick in it makes the span's fence two backticks (`` a`b ``)
            assert re.match(rf"Ignored (`+) ?{re.escape(key)}=", refused[key]) and len(refused[key]) < 240


def test_the_issue_values_each_get_a_notice():
    for text in ("-3", "1.5", "nan", "1e308", "9" * 4400):
        notice = link_values.Whole(0, 255).refusal(text, "steps", "Replaying the prompt only.")
        assert notice and notice.startswith("Ignored `steps=") and "Replaying" in notice and len(notice) < 200
    assert link_values.Whole(0, 255).refusal("12", "steps", "x") is None
    assert link_values.Whole(0, 255).refusal(None, "steps", "x") is None


# ----- one reader of a bounded whole number --------------------------------------------------------------------
@pytest.mark.parametrize("text", [PADDED, "-" + PADDED, "+" + PADDED, " " + PADDED + " ", "0" * 65 + "7"])
def test_every_reader_of_a_whole_number_refuses_zero_padding_past_its_length_cap(text):
    """Each is refused: neither ValueError (Exceeds the limit (4300 digits)) nor the text taken, as when a check
    counts the digits after the zeros and int() then converts the whole string."""
    from kvviz.inputs.prompt_rules import check_int_in_range
    from kvviz.step import link as stage_link

    with pytest.raises(QueryValueError) as caught:
        query_values.whole_number(text, 0, 255, "steps")
    _one_sentence(str(caught.value))
    assert "at most 64 characters" in str(caught.value)
    notice = link_values.Whole(1, 12).refusal(text, "step", "Opening step 1.")
    assert notice and "Opening step 1." in shown(notice) and len(notice) < 240
    refused = query_values.refused_link_numbers({"mem_layers": [text]}, ["mem_layers"])
    assert "64" in refused["mem_layers"] and len(refused["mem_layers"]) < 240
    assert stage_link.url_int(text, 5, 0, 100) == 5  # the stage's links read it too (clamped, never raised)
    with pytest.raises(QueryValueError):
        query_values.whole_number(text, 1, 10, "--steps")
    with pytest.raises(ValueError, match="whole number"):
        check_int_in_range(text, 0, 10, "block size")  # a widget reader takes numbers, never text


@pytest.mark.parametrize("text, expected", [("0" * 63 + "7", 7), ("-0", 0), (" +007 ", 7), ("0", 0)])
def test_zero_padding_within_the_cap_reads_as_its_number(text, expected):
    assert query_values.bounded_int(text, -10, 10) == expected
    assert query_values.whole_number(text, -10, 10, "steps") == expected


@pytest.mark.parametrize("text", ["٣", "３２", "1_6", "𝟙", "1e3", "0x10", "1.0", "\x1b[2J5", "5\n6", "\u202e12", "$1$"])
def test_only_ascii_digits_are_a_whole_number_for_every_reader(text):
    """int() takes '٣', '３２' and '1_6'; kvviz does not, anywhere (the CLI and the app alike)."""
    from kvviz.step import link as stage_link

    with pytest.raises(query_values.WholeNumberRefused):
        query_values.bounded_int(text, -100, 100)
    assert stage_link.url_int(text, 5, 0, 100) == 5
    assert "mem_layers" in query_values.refused_link_numbers({"mem_layers": [text]}, ["mem_layers"])


def test_number_readers_agree_on_huge_python_ints():
    """A 5,000-digit int (not text) is refused in one sentence by each widget/record reader, never str()'d whole."""
    from kvviz import memory, ops
    from kvviz.inputs.prompt_rules import check_int_in_range

    huge = 10**5000
    for check in (
        lambda: check_int_in_range(huge, 0, 10, "block size"),
        lambda: memory.check_int("n_layer", huge),
        lambda: ops.ModelShape(huge, 1, 1, 1, 1, 1, 1),
        lambda: query_values.whole_number(huge, 0, 10, "steps"),
    ):
        with pytest.raises(ValueError) as caught:
            check()
        assert len(str(caught.value)) < 240 and "4300" not in str(caught.value)


# ----- every link key that takes a number, through the router, as a browser opens the page ----------------------


def _bound_int_keys(page: str, prefix: str) -> list[str]:
    """The page's URL-bound number inputs, read from its source (a key added later is covered too): the key is each
    `int_input(label, key, ...)` call's second argument, however the call is wrapped."""
    tree = ast.parse((REPO / "pages" / f"{page}.py").read_text())
    return sorted(
        {
            node.args[1].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "int_input"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith(f"{prefix}_")
        }
    )


# page -> (the numeric link keys it reads, the link's other values it needs)
NUMBER_LINK_KEYS = {
    "step_through": (["steps", "top_k", "seed", "temperature", "step_layer", "step_head"], {"prompt": "ROMEO:"}),
    "lesson": (["step"], {}),
    "memory_budget": (_bound_int_keys("memory_budget", "mem"), {}),
    "attention_ops": (_bound_int_keys("attention_ops", "ops"), {"ops_model": "custom"}),
}
HOSTILE_LINK_VALUES = [  # one or more of each class: padded digits, huge lengths, non-ASCII digits, markup, control characters
    PADDED,
    "-" + PADDED,
    "0" * 63 + "7",
    "0" * 64 + "7",
    "9" * 5000,
    "1" * 100_000,
    "٣",
    "３２",
    "1_6",
    "𝟙",
    "1e309",
    "nan",
    "-inf",
    "![p](http://127.0.0.1:9/x.png)",
    "$\\frac{1}{0}$",
    "`5`",
    "**5**",
    "\x1b]0;PWNED\x07",
    "\x00",
    "5\n6",
    "\u202e12",
    "",
]
LINKS_PER_PAGE = 4  # AppTest runs: each link sets every numeric key of the page at once, to a seeded draw


def _open_through_router(page: str, link: dict[str, str]):
    at = app_test("app.py", query=link)
    at.switch_page(f"pages/{page}.py")  # before the first run: the link's one run is the page's
    at.run()
    return at


def test_every_number_link_key_is_found():
    assert {"mem_layers", "mem_context", "mem_window", "mem_local", "mem_hidden", "mem_gpu_gib"} <= set(
        NUMBER_LINK_KEYS["memory_budget"][0]
    )
    assert {"ops_prompt", "ops_new", "ops_layers"} <= set(NUMBER_LINK_KEYS["attention_ops"][0])


@pytest.mark.app
@pytest.mark.parametrize("page", sorted(NUMBER_LINK_KEYS))
def test_a_zero_padded_number_in_every_key_of_a_page_is_one_notice_each(page):
    """ "0" * 5000 + "1" in any whole-number link value of these pages is one notice, never ValueError (4300
    digits), on this run or the next (Memory budget and Count the work rerun with the URL as it is)."""
    keys, extra = NUMBER_LINK_KEYS[page]
    at = _open_through_router(page, {**extra, **{key: PADDED for key in keys}})
    assert not at.exception, [e.value for e in at.exception][:1]
    notices = [w.value for w in at.warning if w.value.startswith("Ignored `")]
    named = {n.split("=")[0].removeprefix("Ignored `") for n in notices}
    if page in ("memory_budget", "attention_ops"):
        assert named == set(keys) and all("64" in n for n in notices)
    else:  # the stage and the lesson name their step count; the stage's other numbers fall back to defaults
        assert named == {"step" if page == "lesson" else "steps"}
    assert all(len(n) < 240 for n in notices)
    at.run()  # and the rerun is clean
    assert not at.exception


@pytest.mark.app
@pytest.mark.parametrize("page", sorted(NUMBER_LINK_KEYS))
def test_hostile_values_in_every_number_link_key_never_reach_the_page_as_an_exception(page):
    """Derandomised: LINKS_PER_PAGE links per page, each key drawn from HOSTILE_LINK_VALUES with a fixed seed."""
    import random

    keys, extra = NUMBER_LINK_KEYS[page]
    draw = random.Random(f"issue-30-{page}")
    for _ in range(LINKS_PER_PAGE):
        link = {**extra, **{key: draw.choice(HOSTILE_LINK_VALUES) for key in keys}}
        at = _open_through_router(page, link)
        assert not at.exception, (link, [e.value for e in at.exception][:1])
        assert not any(e.value.startswith("Traceback") for e in at.error)


# ----- files that become a model -------------------------------------------------------------------------------
def _write_safetensors(path: Path, header: dict, pad: int = 0) -> None:
    raw = json.dumps(header).encode() + b" " * pad
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def _gpt2_folder(tmp_path: Path, **config) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    cfg = {"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 8, "n_positions": 16, "vocab_size": 10, **config}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_a_safetensors_with_no_tensors_is_refused(tmp_path):
    folder = _gpt2_folder(tmp_path)
    _write_safetensors(folder / "model.safetensors", {"__metadata__": {"format": "pt"}})
    with pytest.raises(ValueError, match="holds no tensors"):
        load_cost.check_folder(folder, None)


def test_a_huge_safetensors_header_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 85_000_000) + b"{}")  # declares 85 MB, holds 2 bytes: never read
    with pytest.raises(ValueError, match="more than the 8 MiB kvviz reads"):
        load_cost.safetensors_header(path)


@pytest.mark.parametrize(
    "config, words",
    [
        ({"n_head": 0}, "n_head, a positive whole number dividing n_embd"),
        ({"n_head": 3}, "n_head, a positive whole number dividing n_embd"),
        ({"torch_dtype": "bogus"}, "torch_dtype = 'bogus'"),
        ({"n_layer": "x" * 1_000_000}, "no usable n_layer"),
    ],
)
def test_config_shapes_python_cannot_build_get_one_sentence(tmp_path, config, words):
    folder = _gpt2_folder(tmp_path, **config)
    _write_safetensors(folder / "model.safetensors", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})
    with pytest.raises(ValueError) as caught:
        load_cost.check_folder(folder, None)
    assert words in str(caught.value) and len(str(caught.value)) < 200


def test_a_config_with_a_5000_digit_number_gets_one_sentence(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2", "n_layer": ' + "9" * 5000 + "}")
    with pytest.raises(ValueError, match="thousands of digits"):
        load_cost.read_config(folder)


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_a_missing_folder_is_not_sent_to_hf_download():
    from kvviz.model import loaders

    with pytest.raises(loading.ModelLoadError) as caught:
        loaders.load_model("/nonexistent/model")
    assert "hf download" not in str(caught.value) and "no model folder" in str(caught.value)


def test_raw_python_errors_become_one_plain_sentence():
    for exc in (
        ZeroDivisionError("integer division or modulo by zero"),
        AttributeError("module 'torch' has no attribute 'bogus'"),
        ValueError("Exceeds the limit (4300 digits); use sys.set_int_max_str_digits()"),
    ):
        text = loading.failure_reason(exc)
        assert "modulo" not in text and "torch'" not in text and "set_int_max" not in text
        assert text.startswith("its files do not describe a GPT-2 model")


def test_a_listed_unknown_random_shape_is_not_offered(tmp_path):
    policy = shared_mode.parse_policy({"models": ["random:bogus", "random:gpt2"]}, base=tmp_path)
    assert [m.name for m in policy.offered] == ["random:gpt2"]


@pytest.mark.model
def test_back_right_after_reset_says_the_cache_is_empty(bundled):
    from kvviz.step.engine import StepEngine
    from kvviz.step.records import PromptError

    engine = StepEngine(bundled)
    engine.prefill("ROMEO:")
    engine.step()
    engine.reset()
    with pytest.raises(PromptError, match="the cache is empty"):
        engine.back()


# properties + the named cases (links)
INPUTS_TRIED = (
    3 * EXAMPLES + 5 + 2 + 4 + 1 + 1 + 3 + 1 + 1 + 5 + 4 + 11 + 4 + len(NUMBER_LINK_KEYS) * (1 + LINKS_PER_PAGE)
)
