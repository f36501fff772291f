"""The step page's copy readout (view.copy_lookup) on the real bundled models: where an induction head
would look for the newest token, and how much attention each head really puts there; and the page's default
decoding (seeded sampling, kvviz.step.records.DEFAULT_SAMPLING) reads as text, not a loop."""

from __future__ import annotations

import html

import numpy as np
import pytest

from kvviz.step import view
from kvviz.step.records import DEFAULT_SAMPLING, Sampling
from support.pages import app_test

REPEAT_PROMPT = view.REPEAT_PROMPT  # the step page's "Repeat a pattern" preset


@pytest.fixture(scope="module", params=["bundled", "bundled-gqa"])
def loaded(request):
    from kvviz.model.loaders import load_model

    return load_model(request.param, attn_implementation="eager")


@pytest.mark.model
def test_copy_lookup_points_at_the_token_after_the_previous_occurrence(loaded):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaded)
    engine.prefill(REPEAT_PROMPT)
    copy = view.copy_lookup(engine.records, layer=0, q_head=0)
    ids = engine.token_ids
    assert copy is not None and copy.query_pos == len(ids) - 1
    assert ids[copy.prev_pos] == ids[-1] and ids[-1] not in ids[copy.prev_pos + 1 : -1]  # the latest earlier one
    assert loaded.tokenizer.decode(ids[copy.target_pos]) == copy.target_text
    weights = engine.records[-1].attention[:, :, copy.target_pos]  # (layers, heads), straight from the model
    assert copy.best_weight == pytest.approx(float(weights.max()))
    assert weights[copy.best_layer, copy.best_head] == pytest.approx(copy.best_weight)
    assert copy.chosen_weight == pytest.approx(float(weights[0, 0]))
    assert view.copy_sentence(copy).startswith(f"{view.visible(copy.query_text)!r} (row {copy.query_pos})")


@pytest.mark.model
def test_no_copy_candidate_without_an_earlier_occurrence(loaded):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaded)
    engine.prefill("ROMEO:")
    ids = engine.token_ids
    assert len(set(ids)) == len(ids)  # no token repeats in the prompt
    assert view.copy_lookup(engine.records, 0, 0) is None
    assert view.copy_sentence(None) == ""


@pytest.mark.model
def test_the_snapshot_carries_the_copy_readout_of_the_step_it_shows(loaded):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaded)
    engine.prefill(REPEAT_PROMPT)
    engine.step()
    snap = engine.snapshot(layer=1, q_head=1, at=0)
    assert snap.copy == view.copy_lookup(engine.records, 1, 1, at=0)


def _has_threefold_loop(token_ids: list[int], longest: int = 12) -> bool:
    """True when some run of 1..longest tokens occurs three times back to back."""
    for n in range(1, longest + 1):
        for i in range(len(token_ids) - 3 * n + 1):
            a = token_ids[i : i + n]
            if a == token_ids[i + n : i + 2 * n] == token_ids[i + 2 * n : i + 3 * n]:
                return True
    return False


def test_loop_detector_finds_a_loop_and_passes_text():
    assert _has_threefold_loop([5, 1, 2, 3, 1, 2, 3, 1, 2, 3, 9])
    assert not _has_threefold_loop([5, 1, 2, 3, 1, 2, 3, 4, 1, 2, 3])


@pytest.mark.model
@pytest.mark.parametrize("prompt", ["ROMEO:", "First Citizen:\nBefore we proceed any further, hear me speak."])
def test_default_decoding_reads_as_text_over_30_tokens(loaded, prompt):
    """The step page's default (seeded sampling) does not loop where greedy decoding on the same model may."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaded, DEFAULT_SAMPLING)
    engine.prefill(prompt)
    for _ in range(30):
        engine.step()
    generated = engine.token_ids[engine.prompt_len :]
    assert not _has_threefold_loop(generated), loaded.tokenizer.decode(generated)
    assert Sampling(greedy=False, temperature=0.8, top_k=40, seed=0) == DEFAULT_SAMPLING
    assert np.unique(generated).size > 10  # words, not one token over and over


@pytest.mark.model
def test_the_lessons_copying_question_is_answered_by_the_live_model(loaded):
    """The lesson's "which row does the copying head read?" step: its answer is the row the real head weighs most."""
    from kvviz.step.engine import StepEngine
    from kvviz.teaching import grading, lesson

    engine = StepEngine(loaded)
    question = lesson._copying_head(engine)
    copy = view.copy_lookup(engine.records, 0, 0)
    weights = engine.records[-1].attention[copy.best_layer, copy.best_head]
    top_row = int(np.argmax(weights))
    assert question.answer in question.choices
    assert question.answer == lesson.OTHER_ROW or question.answer.english.startswith(f"Row {top_row}: ")
    assert grading.check(question, question.answer)


@pytest.mark.model
@pytest.mark.parametrize("name", ["bundled", "bundled-gqa"])
def test_greedy_decoding_loops_on_the_bundled_models_which_is_why_sampling_is_the_default(name):
    """The reason the step page gives for its default: each model's greedy sample (training_report.json,
    written by kvviz.training.train from the shipped weights) repeats itself, while the default decoding does not."""
    import json

    from kvviz.model import loading
    from kvviz.model.loaders import load_model

    report = json.loads((loading.BUNDLED_MODELS[name].folder / "training_report.json").read_text())
    loaded = load_model(name, attn_implementation="eager")
    greedy_ids = loaded.tokenizer(report["sample_greedy"]).input_ids
    assert _has_threefold_loop(greedy_ids, longest=24)


@pytest.mark.app
@pytest.mark.parametrize("name", ["bundled", "bundled-gqa"])
def test_step_page_names_the_copying_head_and_shows_it_on_request(fresh_streamlit_caches, name):
    """ "Repeat a pattern" on the step page: the caption names the head that reads the row after the previous
    occurrence, and its button points the stage at that head."""
    from kvviz.model.loaders import load_model
    from kvviz.step.engine import StepEngine

    at = app_test("pages/step_through.py")
    at.session_state["model_spec"] = name
    at.session_state["step_popover_prompt"] = True  # the Prompt box open: its widgets are drawn only then
    at.run()
    at.selectbox(key="step_preset").set_value("Repeat a pattern").run()
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception
    engine = StepEngine(load_model(name, attn_implementation="eager"))
    engine.prefill(REPEAT_PROMPT)
    copy = view.copy_lookup(engine.records, 0, 0)
    assert copy.best_weight >= view.COPYING_WEIGHT  # the shipped model copies here
    readout = " ".join(html.unescape(h.proto.body) for h in at.get("html"))  # the readout line above the figure
    assert view.copy_sentence(copy).split(" (the head drawn")[0] in readout
    at.button(key="step_show_copy").click().run()
    assert (at.session_state["step_layer"], at.session_state["step_head"]) == (copy.best_layer, copy.best_head)
    assert at.button(key="step_show_copy").disabled  # the stage now draws that head (the button keeps its place)
