"""Chinese that reads native: the catalog checked message by message.

- no "Nx" / "N×" ratio suffix in Chinese prose, and none of the ambiguous 倍 phrasings ("小多少倍", "少读 4 倍",
  "节省 T/3 倍", "快 N 倍", "多出 …x"): a ratio reads 是…的 N 倍 or 减少到 1/N;
- no half-width period after a Chinese step title ("第 1 步. "), none of the known calques (CALQUES);
- no markdown *italics* around Chinese (they print as asterisks or look wrong on CJK), and the handout renders a
  starred Chinese word as italics, never as literal asterisks;
- one Chinese rendering per glossary term (and per term of TERMS) wherever the English term appears;
- the glossary search finds what readers type (KV Cache, 复制头, 投机解码, 前缀缓存, the lesson's own words).
Quotes of the seeds, shown as their authors wrote them, are set aside.
"""

from __future__ import annotations

import re

import pytest

from kvviz import i18n
from kvviz.i18n import catalog
from kvviz.teaching import glossary, handout, lesson
from support.library import english_names, term_named
from support.pages import app_test

CJK = re.compile(r"[\u4e00-\u9fff]")
# A seed quoted as its author wrote it (the Chinese visualiser's "加速比约 500x"): not our prose.
QUOTED_AS_WRITTEN = {"with a KV cache, generating {n} tokens takes ~500x fewer computations."}


def _messages() -> list[tuple[str, str]]:
    """(English msgid, Chinese msgstr) for every translated message (each plural form too)."""
    held = catalog.read(i18n.catalog_path(i18n.CHINESE))
    out = []
    for m in held:
        if not m.id or not m.string:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        if ids[0] in QUOTED_AS_WRITTEN:
            continue
        out += [(ids[0], s) for s in strings if s]
    return out


def _prose(text: str) -> str:
    """The text a reader reads as prose: code spans and quoted titles stand in as a Latin word."""
    text = re.sub(r"`[^`]*`", "CODE", text)
    return re.sub(r"“[^”]*”|「[^」]*」", "QUOTE", text)


def _chinese(text: str) -> bool:
    return bool(CJK.search(text))


# A number or a placeholder with x/× glued on ("11.0x", "{ratio:.2f}x", "4×"): an English ratio suffix.
RATIO_SUFFIX = re.compile(r"(?:\d|\})[x×](?![\w{(])")
AMBIGUOUS_BEI = re.compile(
    r"小多少倍|小\s*[\d{][^。；，]{0,16}倍|少读\s*[\d{]|节省[^。；]{0,12}倍|快\s*[\d{][^。；，]{0,16}倍"
    r"|多出\s*[\d{][^。；]{0,16}(?:倍|x)"
)


def test_no_english_ratio_suffix_in_chinese_prose():
    found = [(en[:60], zh[:80]) for en, zh in _messages() if _chinese(zh) and RATIO_SUFFIX.search(_prose(zh))]
    assert not found, f"{len(found)} messages write a ratio as 'Nx' in Chinese, e.g. {found[:5]}"


def test_no_ambiguous_bei():
    found = [(en[:60], zh[:80]) for en, zh in _messages() if AMBIGUOUS_BEI.search(_prose(zh))]
    assert not found, f"{len(found)} messages say 小/少/快/节省/多出 … 倍, e.g. {found[:5]}"


def test_regexes_catch_what_they_name():
    assert RATIO_SUFFIX.search("多出 {ratio:.1f}x。") and RATIO_SUFFIX.search("吞吐量为 11.0x")
    assert not RATIO_SUFFIX.search("{n_layer} x {n_head} = 12") and not RATIO_SUFFIX.search("0x10 地址 2 × 3")
    for bad in ("它的缓存小多少倍？", "少读 4 倍字节", "约节省 T/3 倍", "快 {ratio:.2f} 倍", "多出 {ratio:.1f}x"):
        assert AMBIGUOUS_BEI.search(bad), bad
    assert not AMBIGUOUS_BEI.search("后者是前者的 {ratio:.1f} 倍") and not AMBIGUOUS_BEI.search("减少到 1/4")


def test_a_how_many_times_question_asks_for_a_multiple():
    """A question whose answer is a multiple ("How many times smaller ...?", answered 4) asks 几倍 / 多少倍 in Chinese:
    "减少到原来的几分之一" asks for a fraction, and a student who answers 1/4 is marked wrong (lesson step 10)."""
    asked = [(en, zh) for en, zh in _messages() if "how many times" in en.lower()]
    assert asked
    wrong = [zh for en, zh in asked if "几分之一" in zh or not re.search(r"[几多少]倍", zh)]
    assert not wrong, wrong


# A head (or layer's head) numbered from 0 written as a count: "第 {head} 个头" reads as "the head-th head", so
# head 1 (H1) reads as the first head, H0. An index starting at 0 is written as the picker shows it: 头 H{head}.
HEAD_AS_COUNT = re.compile(r"第\s*(?:\{\w*head\w*\}|\d+)\s*个头")


def test_a_zero_based_head_is_named_by_its_index_not_counted():
    counted = [zh for _, zh in _messages() if HEAD_AS_COUNT.search(zh)]
    assert not counted, counted
    assert HEAD_AS_COUNT.search("第 {layer} 层第 {head} 个头") and HEAD_AS_COUNT.search("第 0 层第 0 个头")
    assert not HEAD_AS_COUNT.search("第 3 层的头 H1")


def test_no_half_width_period_after_a_chinese_title():
    """'第 1 步. 标题': a Chinese heading takes a full-width colon (or none), never an English period."""
    found = [zh for _en, zh in _messages() if re.search(r"[\u4e00-\u9fff][.,;!?](?:\s|$)", _prose(zh))]
    assert not found, found[:5]
    # nor a stray space between two Chinese characters, nor a half-width , ; : inside a Chinese sentence
    stray = re.compile(
        r"[\u4e00-\u9fff] +[\u4e00-\u9fff]|[\u4e00-\u9fff][,;:](?=[\s\u4e00-\u9fff])"
        r"|[,;:](?=[\u4e00-\u9fff])"
    )
    found = [zh for _en, zh in _messages() if stray.search(_prose(zh))]
    assert not found, found[:5]
    with i18n.language(i18n.CHINESE):
        assert i18n._("Step {number}. {title}").format(number=1, title="缓存") == "第 1 步：缓存"
        assert i18n._("Check") == "提交"  # an answer is handed in (提交), not inspected (检查)


# Calques a native reader flags: each has a native rendering in the catalog.
CALQUES = (
    "你看到的是什么",
    "站在虚线上",
    "对比赛跑",
    "恰好大小",
    "缓存簿记",
    "测量上下文扫描",
    "计算出的答案是",
    "窗口下方的完整层数",
    "权重在缓存中",
    "连 1 个新 token 都放不下",
    # these read natively as, among others, 在课堂上使用, 原文给出的, 实时查看, 演示区, 画面正忙, 计算量上限, 正在启动
    "为一个班级运行",
    "印出的",
    "去页面上看它实际运行",
    "舞台区",
    "舞台忙",
    "有上限的工作量",
    "本层中有名字的模式",
    "选了那个 token 之前的出现",
    "正在开始",
    "无全局",
    "局部层/全局层",
)


def test_no_flagged_calque():
    found = [(c, zh[:60]) for _en, zh in _messages() for c in CALQUES if c in zh]
    assert not found, found
    assert all(c not in v for c in CALQUES for v in glossary.VOCABULARY.values())


_BOLD = re.compile(r"\*\*.+?\*\*", re.S)
_ITALIC = re.compile(r"(?<!\*)\*(?![*\s])([^*\n]+?)(?<![*\s])\*(?!\*)")


def test_no_markdown_italics_around_chinese():
    found = []
    for en, zh in _messages():
        for run in _ITALIC.findall(_BOLD.sub(" ", re.sub(r"`[^`]*`", " ", zh))):
            if _chinese(run):
                found.append((run, en[:50]))
    assert not found, f"{len(found)} Chinese runs in *italics*: {found[:6]}"


@pytest.mark.parametrize(
    "text, html",
    [
        ("在*每一*层追加", "<p>在<i>每一</i>层追加</p>"),
        ("紧跟在它*后面*的 token", "<p>紧跟在它<i>后面</i>的 token</p>"),
        ("in *every* layer", "<p>in <i>every</i> layer</p>"),
        ("a*b*c and 2 * 3", "<p>a*b*c and 2 * 3</p>"),  # Latin letters beside the stars: not emphasis
        ("**粗体**与*斜体*", "<p><b>粗体</b>与<i>斜体</i></p>"),
    ],
)
def test_handout_italics_never_print_asterisks_beside_chinese(text, html):
    assert handout.markdown_html(text) == html


@pytest.mark.model
def test_the_chinese_handout_prints_no_asterisk(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    with i18n.language(i18n.CHINESE):
        steps = lesson.STEPS[:3]
        doc = handout.handout_html(steps, [s.ask(engine) for s in steps], "GPT-2")
    body = re.sub(
        r"<script.*?</script>|<div class=\"plotly-graph-div\".*?</div>|<style.*?</style>", " ", doc, flags=re.S
    )
    text = re.sub(r"<[^>]+>", " ", body[body.index("<body>") :])
    assert "*" not in text and "第 1 步：" in text


# One Chinese rendering per concept: the English term (a regex over the msgid, code spans and quotes aside) ->
# the Chinese every message that says it uses, and the variants it replaced (none may appear anywhere).
TERMS = {
    r"\bhidden size\b": ("隐藏维度", ("隐藏层宽度", "隐藏层维度", "隐藏大小")),
    r"\bforward pass": ("前向传播", ("前向计算", "正向传播", "前向过程")),
    r"\bcompute (?:roof|ceiling)": ("算力上限", ("计算屋顶", "计算上限")),
    r"\bmemory (?:roof|ceiling)": ("内存带宽上限", ("访存屋顶", "内存上限")),
    r"\bread roof(?!line)": ("读带宽上限", ("读上限",)),
    r"\bGPT-2 124M shape": ("GPT-2 124M 结构", ("124M 规模", "124M 形状")),
    r"\blog scale": ("对数刻度", ("对数坐标", "对数尺度")),
    r"\bRepeat a pattern\b": ("重复一个模式", ("重复模式",)),
    r"^Back$": ("上一步", ("后退",)),
    r"\bGPU memory\b": ("显存", ("GPU 内存",)),
    r"\bevict": ("驱逐", ("逐出",)),  # one word on the eviction page and the sliding-window page
    r"\bthe KV cache in \{n\} questions": ("讲清", ("讲透",)),  # the lesson's title, on home and in the lesson
    r"\bmemory calculator\b": ("显存预算", ("内存计算器",)),  # the memory page, by its own title
    # the name as configs and transformers write it (as the Chinese sources keep head_dims / self.head_dim), glossed
    # 每个头的维度 where it is introduced, as the glossary glosses it
    r"\bhead[_ ]dim\b|\bhead sizes?\b": ("head_dim", ("头维度", "每头维度")),
    r"\bwhole[- ](?:run|generation)\b|\bover a run\b": ("整个生成过程", ("整个运行", "整次生成")),
    r"\bflat\b[\w ,-]{0,30}\bbuffer\b": ("扁平缓冲区", ("连续缓冲区",)),  # the memory page's, the lesson's, one word
    r"\bundated\b|\bdate not recorded\b": ("未注明日期", ("无日期", "日期未记录")),  # the sources' dates
    r"\bBounded work\b": ("测量规模", ("有界的工作量", "工作量有上限")),  # what a measurement will run, before it runs
    r"\boutlined\b": ("带描边", ("加框", "加了边框")),
    r"\bstep[- ]through session\b|\bstep page\b": ("逐步生成", ("逐步页面", "逐步执行")),  # the page, by its title
    r"\btokens?/s\b": ("token/s", ("token/秒",)),
    # a head's index as the stage's picker writes it (H0, H1 ...): 头 H1, 查询头 H1, KV 头 H1, never 头 1
    r"\b(?:q(?:uery)? |kv |K/V )?head \{\w+\}|\bhead \d": (
        "头 H",
        ("头 {head}", "头 {kv_head}", "头 {kv}", "头 {q_head}"),
    ),
    r"\bms\b|\bmilliseconds?\b": ("ms", ("毫秒",)),  # a unit's symbol, as token/s, GB/s and µs are written
    r"\bfp8 \(transformers\)|\bfp8-hf\b": ("fp8（transformers）", ("fp8-hf",)),  # transformers' own fp8 cache
    r"\bKB\b": ("KB", ("kB",)),  # the units rule's spelling, as the byte formatter writes it
}


def _english(en: str) -> str:
    return re.sub(r"""`[^`]*`|"[^"]*"|'[^']*'""", " ", en)


@pytest.mark.parametrize("pattern", list(TERMS))
def test_one_rendering_per_key_term(pattern):
    chinese, variants = TERMS[pattern]
    off = [(en[:60], zh[:60]) for en, zh in _messages() if re.search(pattern, _english(en), re.I) and chinese not in zh]
    assert not off, f"{pattern!r} is not {chinese} in {off[:5]}"
    used = [(v, zh[:60]) for _en, zh in _messages() for v in variants if v in zh]
    used += [
        (v, zh) for zh in (*glossary.VOCABULARY.values(), *(t.zh for t in glossary.TERMS)) for v in variants if v in zh
    ]
    assert not used, used[:5]


# Names a Chinese page keeps as written (code, units, acronyms), ordinary English words with other senses on a page
# ("a config key", "a field's value"), and other names that are related ideas rather than synonyms.
KEPT_AS_WRITTEN = re.compile(r"^(?:[A-Z][a-z]+[A-Z]\w*|\w*[_^]\w*|[KMG]i?B|[A-Z]{1,4}(?:, [A-Z]{1,4})*|FLOPS?|FLOP/s)$")
NOT_THE_TERM = {
    "query",
    "key",
    "value",
    "block table",
    "paging",
    "dispatch",
    "int8",
    "int4",
    "attention score",
    "local attention",
    "fixed cost",
}
# The word also names a nearby idea: the read roof (a bandwidth roof, 读带宽上限) is not the roofline chart.
NOT_WHEN = {"Roofline": re.compile(r"read roofline|roofline (?:fraction|verdict)", re.I)}


def test_each_glossary_term_has_one_chinese_rendering_in_the_catalog():
    """Wherever a message names a glossary term (its English name, a part of a combined name, or an English
    synonym among its other names), the translation writes one of the term's Chinese names as the term table lists
    them (Term.zh, "归纳头（复制头）": 归纳头 or 复制头); one word per concept across the glossary, the catalog and the
    pages. A term kept in Latin letters ("Roofline 模型") is rendered by that name."""
    off, checked = [], 0
    for term in glossary.TERMS:
        if term.zh.lower() == term.name.lower():  # kept as it is (token, head_dim, FLOP): nothing to render
            continue
        chinese = glossary._chinese_names(term)
        chinese += [c.split()[0] for c in chinese if c.split()[0].isascii() and len(c.split()) > 1]  # Roofline 模型
        for name in english_names(term):
            if not name.isascii() or KEPT_AS_WRITTEN.match(name) or name.lower() in NOT_THE_TERM:
                continue
            pattern = re.compile(r"(?<![\w-])" + re.escape(name) + r"s?(?![\w-])", re.I)
            for en, zh in _messages():
                english = _english(en)
                if term.name in NOT_WHEN:
                    english = NOT_WHEN[term.name].sub(" ", english)
                if pattern.search(english):
                    checked += 1
                    if not any(c in zh for c in chinese):
                        off.append((term.name, name, en[:50], zh[:50]))
    assert checked > 100  # the check is real: many messages name a glossary term
    assert not off, f"{len(off)} messages render a glossary term otherwise, e.g. {off[:6]}"


@pytest.mark.parametrize(
    "typed, wanted",
    [
        ("KV Cache", "KV cache"),
        ("kv-cache", "KV cache"),
        ("KV缓存", "KV cache"),
        ("键值缓存", "KV cache"),
        ("复制头", "Induction head"),
        ("归纳头", "Induction head"),
        ("投机解码", "Speculative decoding"),
        ("前缀缓存", "Prefix caching"),
        ("prefix cache", "Prefix caching"),
        ("滑窗", "Sliding window"),
        ("隐藏维度", "head_dim"),
        ("前向传播", "Prefill"),
        ("多头注意力", "MHA, GQA, MQA"),
        ("分组查询注意力", "MHA, GQA, MQA"),
        ("Q", "Query, key, value (Q, K, V)"),
        ("查询", "Query, key, value (Q, K, V)"),
        ("解码", "Decode step"),
        ("屋顶线", "Roofline"),
        ("静态缓存", "StaticCache"),
        ("speculative sampling", "Speculative decoding"),
    ],
)
def test_glossary_search_finds_what_readers_type(typed, wanted):
    for language in (i18n.ENGLISH, i18n.CHINESE):
        with i18n.language(language):
            found = [t.name for t in glossary.TERMS if glossary.matches(t, typed)]
        assert wanted in found, (typed, language, found)
    if typed in (
        "KV Cache",
        "kv-cache",
        "KV缓存",
        "键值缓存",
        "复制头",
        "投机解码",
        "前缀缓存",
        "prefix cache",
        "滑窗",
        "静态缓存",
    ):
        assert glossary.find(typed) is term_named(wanted), typed


@pytest.mark.app
def test_english_claims_keep_their_words_and_get_a_translation_beside_them(fresh_streamlit_caches):
    """A fact-checking page quotes a source as written: in Chinese an English quote stays English inside the
    quotation marks, with the translation beside it (译文：…); kvviz's own verdicts say ratios in 倍."""

    from kvviz import claims

    english = {c.key: c for c in claims.all_claims()}
    with i18n.language(i18n.CHINESE):
        chinese = claims.all_claims()
    verbatim = {"gemma3-896mb", "total-work-o-n", "system-prompt-prefill"}  # English sources' own words
    for c in chinese:
        if c.key in verbatim:
            assert c.quote == english[c.key].quote and not _chinese(c.quote), c.key
            assert _chinese(c.translation) and c.translation != c.quote, c.key
            assert english[c.key].translation == "", c.key  # an English reader reads the words themselves
        assert not RATIO_SUFFIX.search(c.finding), (c.key, c.finding)
    only_q = english["only-own-q"]  # a Chinese source: its words in the quote in English too, translation beside
    assert _chinese(only_q.quote) and only_q.translation.startswith("Decode: each new token computes only Q")
    at = app_test("app.py", lang=i18n.CHINESE)
    at.run()
    at.switch_page("pages/claims.py").run()
    texts = [m.value for m in at.markdown]
    for c in chinese:
        if c.key in verbatim:
            at_quote = texts.index(f"**“{c.quote}”**")
            assert texts[at_quote + 1] == f"译文：{c.translation}", c.key


@pytest.mark.app
def test_no_internal_identifier_stands_alone_on_screen(fresh_streamlit_caches):
    """'stored 0.17 ms, onednn 0.38 ms' and a chart titled 'head_major': a reader gets a human name (the setting's
    value beside it where a control offers it)."""
    import json

    from kvviz.speedup.records import FormatChoice, format_name

    choice = FormatChoice("stored", (("stored", 0.17), ("onednn", 0.38)), "measured")
    with i18n.language(i18n.CHINESE):
        text = choice.describe()
        assert format_name("onednn") == "oneDNN 预打包副本（onednn）" and "速度是另一种的 2.24 倍" in text
    assert not re.search(r"(?<![(（])\b(?:stored|onednn)\b(?![)）])", text), text
    at = app_test("pages/internals_layout.py", lang=i18n.CHINESE)
    at.run()
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles and not any(re.search(r"head_major|position_major", t) for t in titles), titles
    assert any("预分配，头优先" in t for t in titles), titles


def test_joined_strings_use_chinese_separators():
    """Strings joined in code: items with 、, clauses with ；, sentences with no space after 。 (the chart's text for
    a screen reader, the handout's caption); English keeps ", ", "; " and a space."""
    from plotly import graph_objects as go

    from kvviz.figures import describe

    with i18n.language(i18n.CHINESE):
        assert i18n.item_sep().join(["Q", "K", "V"]) == "Q、K、V" and i18n.list_sep() == "；"
        assert i18n.join_sentences(["图。", "柱：a 1。"]) == "图。柱：a 1。"
        text = describe(go.Figure([go.Bar(x=["a", "b"], y=[1, 2]), go.Scatter(x=[0, 1], y=[1, 2])]))
        assert "。 " not in text and "bar" not in text and "scatter" not in text, text
        assert "; ".join(["x", "y"]) not in lesson.preset_steps_text()
    assert i18n.join_sentences(["Chart.", "bars: a 1."]) == "Chart. bars: a 1."


def test_a_byte_axis_reads_binary_units_never_wan():
    """Bytes on the layout and sliding-window charts: ticks in KiB/MiB with the unit's size on the axis title, in
    both languages (bytes never take 万 or 亿, which count things); the hover says the bytes exactly."""
    from kvviz.figures import internals as figs

    with i18n.language(i18n.CHINESE):
        fig = figs.append_copy_figure([0, 100, 200], {"a": [0, 50_000, 100_000]}, 768, "t")
    title = fig.layout.yaxis.title.text
    assert "万" not in title and title.endswith("单位：KiB（1,024 字节）") and fig.layout.yaxis.exponentformat == "none"
    assert list(fig.data[0].customdata) == [768, 50_768, 100_768]
    assert list(fig.data[0].y) == [768 / 1024, 50_768 / 1024, 100_768 / 1024]
    assert fig.data[0].hovertext[1].startswith("100：50,768 B")


# ----- the widgets' own words: what Streamlit and plotly let a page set -----


def test_plotly_chrome_travels_in_the_chart_config_in_the_readers_language():
    """The mode bar's titles ("Download plot as a PNG", "Zoom in", "Autoscale") are plotly's: a Chinese page hands
    plotly the zh-CN locale and its dictionary (the plotly.js inside Streamlit registers only en and en-US); an
    English page's config is left as it was."""
    from kvviz.figures import PLOTLY_CHROME, chart_config, export_config

    given = export_config("x")
    assert chart_config(given) == given and "locale" not in given
    with i18n.language(i18n.CHINESE):
        config = chart_config(given)
    assert config["toImageButtonOptions"] == given["toImageButtonOptions"] and config["locale"] == i18n.CHINESE
    dictionary = config["locales"][i18n.CHINESE]["dictionary"]
    assert set(dictionary) == set(PLOTLY_CHROME) and all(_chinese(zh) for zh in dictionary.values()), dictionary
    assert dictionary["Download plot as a PNG"] != dictionary["Download plot"]


def test_every_chart_is_drawn_through_the_one_adapter():
    """st.plotly_chart is called in one place (kvviz.ui.a11y.plot), so no chart misses plotly's locale."""
    from support.repo import REPO

    direct = [
        f"{path.relative_to(REPO)}:{n}"
        for folder in ("pages", "kvviz")
        for path in (REPO / folder).rglob("*.py")
        if path != REPO / "kvviz" / "ui" / "a11y.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.plotly_chart\(", line.split("#")[0]) and '"""' not in line
    ]
    assert not direct, direct


def test_every_multiselect_says_its_placeholder_in_the_readers_language():
    """Streamlit writes "Choose options" in an empty multiselect unless the page passes its placeholder."""
    import ast

    from support.repo import REPO

    bare = []
    for path in sorted((REPO / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "multiselect"
                and "placeholder" not in {k.arg for k in node.keywords}
            ):
                bare.append(f"{path.name}:{node.lineno}")
    assert not bare, bare
    with i18n.language(i18n.CHINESE):
        assert i18n._("Choose options") == "请选择"


@pytest.mark.app
def test_a_chinese_page_sets_plotly_and_streamlit_chrome_in_chinese(fresh_streamlit_caches):
    import json

    at = app_test("pages/memory_budget.py", lang=i18n.CHINESE)
    at.run()
    assert not at.exception
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert configs and all(c.get("locale") == i18n.CHINESE for c in configs), configs[:1]
    assert configs[0]["locales"][i18n.CHINESE]["dictionary"]["Autoscale"] == "自动缩放"
    assert [m.proto.placeholder for m in at.multiselect] == ["请选择"]


def test_the_readmes_chinese_paragraphs_are_not_hard_wrapped():
    """GitHub renders a line break inside a paragraph as a space: between two Chinese characters it is a stray gap.
    A Chinese paragraph is one line."""
    from support.repo import REPO

    text = (REPO / "README.md").read_text(encoding="utf-8")
    chinese = re.sub(r"```.*?```", "", text[text.index("## 简体中文") :], flags=re.S)
    wrapped = re.findall(r"[\u4e00-\u9fff，。：；、（）“”*]\n(?=[^\n#`\-])", chinese)
    assert not wrapped, wrapped
    assert "streamlit/streamlit/issues/1353" in chinese  # what only Streamlit can change, with its upstream issue


# "A vs B" in a title or a label: Chinese says how the two compare (A 随 B 的变化 where B is the axis; A 与 B 对比; 与…相比;
# …之差; 相对…), never "vs" and never a bare 与 ("A and B"). Sentences are left to their own words.
VERSUS = re.compile(r"随|对比|相比|之差|差值|相对")


def test_a_title_says_how_two_things_compare_not_vs():
    said = [(en, zh) for en, zh in _messages() if re.search(r"\bvs\b\.?|\bversus\b", _english(en))]
    assert len(said) > 10
    assert not [zh for _en, zh in _messages() if re.search(r"\bvs\b\.?|\bversus\b", _prose(zh), re.I)]
    titles = [(en, zh) for en, zh in said if not re.search(r"[.!?](?:\s|$)", en)]
    bare = [(en, zh) for en, zh in titles if not VERSUS.search(zh)]
    assert not bare, bare
    assert not VERSUS.search("质量与保留字节") and VERSUS.search("KV 缓存大小随上下文长度的变化")


# Marks even across the catalog: “” for quotes (never 「」), a gloss after Chinese in full-width brackets
# (多头注意力（MHA）, not 多头注意力 (MHA)), ≥ and O(n²) written one way each.
HALF_WIDTH_GLOSS = re.compile(r"(?<=[\u4e00-\u9fff*]) ?\(([A-Za-z][A-Za-z0-9 ]*)\)(?![\w/])")
UNEVEN_MARKS = re.compile(r"[「」]|>=|O\(n\^")


def test_marks_are_written_one_way():
    assert HALF_WIDTH_GLOSS.search("多头注意力 (MHA)") and HALF_WIDTH_GLOSS.search("**预填充** (prefill)")
    assert not HALF_WIDTH_GLOSS.search("比值 (N+2)/3") and not HALF_WIDTH_GLOSS.search("元素 (head, position, dim)")
    texts = [zh for _en, zh in _messages()] + [t.zh for t in glossary.TERMS]
    found = [
        zh[:60]
        for zh in texts
        if HALF_WIDTH_GLOSS.search(re.sub(r"`[^`]*`", "", zh)) or UNEVEN_MARKS.search(re.sub(r"`[^`]*`", "", zh))
    ]
    assert not found, found


def test_a_terms_name_says_its_english_once_in_one_bracket():
    """The lesson's term chips and the tooltips: "KV 缓存（KV cache）", "查询（Q）、键（K）、值（V）" (the English is in
    it already, not repeated), "归纳头（复制头，Induction head）" (never two brackets side by side)."""
    with i18n.language(i18n.CHINESE):
        names = {t.name: glossary.display_name(t) for t in glossary.TERMS}
    assert (
        names["KV cache"] == "KV 缓存（KV cache）"
        and names["Query, key, value (Q, K, V)"] == "查询（Q）、键（K）、值（V）"
    )
    assert names["Induction head"] == "归纳头（复制头，Induction head）" and names["Roofline"] == "Roofline 模型"
    bad = [n for n in names.values() if "）（" in n or "(" in n or n.count("（") > max(1, n.count("、") + 1)]
    assert not bad, bad


# One dash style: a dash in Chinese prose is the full 破折号 ——; a range of numbers is 3～7 (浪纹线, as
# `numbers.span` writes it); a range of words says 至 (最快至最慢). A lone — stands only for "no answer".
UNEVEN_DASHES = re.compile(
    r"–|(?<!—)—(?!—)(?=.)|(?<=.)(?<!—)—(?!—)|(?<![\w.,{}-])(?:\d[\d.,]*%?|\{[^{}]*\})-(?:\d[\d.,]*(?![\d.,]*[A-Za-z])|\{)"
)


def test_dashes_are_written_one_way():
    assert (
        UNEVEN_DASHES.search("最快–最慢") and UNEVEN_DASHES.search("最慢—最快") and UNEVEN_DASHES.search("{lo}-{hi} ms")
    )
    assert (
        not UNEVEN_DASHES.search("这是——破折号") and not UNEVEN_DASHES.search("—") and not UNEVEN_DASHES.search("3～7")
    )
    assert not UNEVEN_DASHES.search("Llama-3-8B、GPT-2") and UNEVEN_DASHES.search("在 30%-45% 之间")
    assert not UNEVEN_DASHES.search("Gemma 3-4B、Llama 3.1-70B")
    found = [zh[:60] for _en, zh in _messages() if UNEVEN_DASHES.search(re.sub(r"`[^`]*`", "", zh))]
    assert not found, found


def test_a_range_built_in_code_is_written_in_the_readers_language():
    from kvviz.i18n import numbers
    from kvviz.teaching import guide

    assert (
        numbers.span(0, 5, lang=i18n.ENGLISH) == "0–5" and numbers.span("30%", "45%", lang=i18n.CHINESE) == "30%～45%"
    )
    with i18n.language(i18n.CHINESE):
        first, second = (b.minutes for b in guide.PLAN_30[:2])
        assert [r["minutes"] for r in guide.plan_rows(guide.PLAN_30)][:2] == [
            f"0～{first}",
            f"{first}～{first + second}",
        ]


def test_the_chinese_handout_never_slants_chinese():
    """Browsers draw an italic CJK face by slanting the upright one (faux italic): hard to read, and not how Chinese
    marks emphasis. In a Chinese handout the hint is upright and emphasis takes 着重号 (dots under the characters)."""
    rules = re.sub(r"\s+", " ", handout._CSS)
    assert ":lang(zh) .hint" in rules and ":lang(zh) i" in rules
    zh_rule = re.search(r":lang\(zh\) \.hint, :lang\(zh\) i \{([^}]*)\}", rules)
    assert zh_rule and "font-style: normal" in zh_rule.group(1) and "text-emphasis" in zh_rule.group(1)


def test_one_name_for_a_format_and_one_spelling_for_a_unit_where_code_writes_them():
    """Beside the catalog (TERMS): the eviction chart labels transformers' fp8 cache by its name, fp8（transformers）,
    as the text does (its key, fp8-hf, was the legend's label), and the byte formatter writes KB, the units rule's
    spelling (it printed "131.1 kB" beside a "KB" label)."""
    import json

    from kvviz.figures import eviction as eviction_figs
    from kvviz.internals.eviction import EvictSettings
    from kvviz.internals.records import EvictionPoint, EvictionSweep
    from kvviz.memory import units

    def point(policy: str, kind: str, keep: int, kept: int) -> EvictionPoint:
        return EvictionPoint(policy, kind, keep, 64, 64, kept, 1024, 40, 50, 3.1, 3.0, (20, 20), (0.1, 0.1))

    sweep = EvictionSweep(
        "test model",
        EvictSettings(),
        (
            point("full", "eviction", 100, 1024),
            *(point("recent", "eviction", keep, 1024 * keep // 100) for keep in (50, 25)),
            point("fp8", "quantized", 100, 256),
            point("fp8-hf", "quantized", 100, 256),
        ),
        32,
        2000,
    )
    for metric in ("copy", "loss"):
        with i18n.language(i18n.CHINESE):
            shown = json.dumps(eviction_figs.quality_figure(sweep, ["recent"], metric).to_dict(), ensure_ascii=False)
        assert "fp8-hf" not in shown and "fp8（transformers）" in shown, metric
    assert units.decimal_bytes(131_072) == "131.1 KB" and units.format_bytes(131_072).endswith("= 128 KiB = 131.1 KB")
