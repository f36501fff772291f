"""AppTest of the "Claims checked" page: it renders every claim with its verdict, links each to its live page,
and the GPU picker changes the prefill claim's verdict. Rendered through app.py so the page links resolve."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import claims
from support.pages import app_test

pytestmark = [pytest.mark.app, pytest.mark.usefixtures("fresh_streamlit_caches")]


def claims_page() -> AppTest:
    at = app_test("app.py")
    at.run()
    at.switch_page("pages/claims.py")
    at.run()
    assert not at.exception
    return at


def test_claims_page_shows_every_claim_with_verdict_and_link():
    at = claims_page()
    assert at.title[0].value == "Claims checked"
    found = claims.all_claims()
    texts = " ".join(m.value for m in at.markdown)
    for c in found:
        assert c.quote in texts and c.finding in texts
    counts = {m.label: m.value for m in at.metric}
    assert counts == {v.capitalize(): str(sum(c.verdict == v for c in found)) for v in claims.VERDICT_LABELS}
    links = at.main.get("page_link")  # (the sidebar has the navigation's page links)
    assert len(links) == len(found) + 1  # one "see it live" per claim, and the units rule's glossary entry
    assert any("570,425,344 B" in c.value for c in at.code)  # the Gemma claim's arithmetic, exact
    assert any(c.value == claims.UNITS_RULE for c in at.caption)  # the one units rule, stated
    assert at.selectbox(key="claims_gpu").label == claims.GPU_LABEL and "FP16 on the T4" in claims.GPU_LABEL


def test_gpu_choice_changes_the_prefill_verdict():
    """The prefill claim is judged on the Apple GPU its source is about (wrong at any utilization); on an H100 it
    cannot be judged without an assumed utilization, and the card says the H100 is not the source's hardware."""
    at = claims_page()
    prefill = next(c for c in claims.all_claims() if c.key == "system-prompt-prefill")
    assert prefill.verdict == "wrong" and "Apple M1 Ultra" in prefill.finding
    assert any(prefill.finding == m.value for m in at.markdown)
    at.selectbox(key="claims_gpu").set_value("NVIDIA H100 SXM").run()
    assert not at.exception
    h100 = claims.all_claims("NVIDIA H100 SXM")[-1]
    assert h100.verdict == "cannot be judged" and any(h100.finding == m.value for m in at.markdown)
    assert "not the hardware it describes" in h100.finding
    assert {m.label: m.value for m in at.metric}["Cannot be judged"] == "1"


def test_seed_figures_lead_the_page_with_their_sources():
    """The seeds' own figures are the first cards (quote as written, translation beside
    it), and the published-figures card names each source by title."""
    at = claims_page()
    texts = [m.value for m in at.markdown]
    first = next(i for i, t in enumerate(texts) if "472MB" in t)
    assert texts[first] == f"**“{claims.ZHIHU_QUOTE}”**"  # the words as written, nothing inside the quotes added
    assert texts[first + 1] == f"Translation: {claims.ZHIHU_TRANSLATION}"  # the translation beside them
    assert any("4GB/样本" in t for t in texts[first : first + 6])
    captions = " ".join(c.value for c in at.caption)
    assert "https://www.zhihu.com/question/596900067/answer/3040011798" in captions
    assert "'KV Cache 原理' (address not recorded" in captions
    for title in claims.PUBLISHED_SOURCE_TITLES.values():
        assert f"'{title}'" in captions


@pytest.mark.parametrize("claim", [c for c in claims.all_claims() if c.page_query], ids=lambda c: c.key)
def test_each_see_it_live_link_opens_its_page_in_the_claims_state(claim):
    """The link's URL state is accepted by the target page (no refusal notice) and sets its widgets."""
    at = app_test(claim.page.file, query=claim.page_query)
    at.run()
    # no refusal of the link (a page's own verdicts may stand: the memory page's What fits tab, which always runs,
    # says in an error box when a model's weights do not fit the GPU at all)
    refusals = [m.value for m in [*at.warning, *at.error] if "from the link" in m.value]
    assert not at.exception and not refusals, (claim.key, refusals)
    for key, value in claim.page_query.items():  # tabs included: an unknown tab label falls back silently
        assert str(at.session_state[key]) == value, (claim.key, key)
