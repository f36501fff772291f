"""Every address a claim's source gives is a link that ends where the address ends, in both languages: an autolink
(<https://...>) or a markdown link, never a bare URL that a Chinese sentence's full-width punctuation (written without
a space: "…/answer/3040011798；GPT-3") would run into and break (the href then holds %EF%BC…)."""

from __future__ import annotations

import re

import pytest

from kvviz import claims, i18n

BARE_URL = re.compile(r"(?<![<(])https?://")  # an address not opened by < (autolink) or ( (a markdown link's target)
URL = re.compile(r"<(https?://[^>\s]+)>|\]\((https?://[^)\s]+)\)")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_source_address_is_a_whole_link(lang):
    with i18n.language(lang):
        texts = [c.source for c in claims.all_claims()]
        texts += [g.source for g in claims.GPU_COMPUTE.values()]
        texts += [g.bandwidth_source for g in claims.GPU_COMPUTE.values() if g.bandwidth_source]
    texts = [i18n._(t) if lang != "en" else t for t in texts]
    found = 0
    for text in texts:
        assert not BARE_URL.search(text), text
        for address in (a or b for a, b in URL.findall(text)):
            found += 1
            assert address.isascii() and not address.endswith((".", ",", ";", ":")), address
    assert found >= 9  # the claims' and the GPUs' sources
