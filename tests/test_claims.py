"""kvviz.claims: every verdict's numbers pinned, each checked against arithmetic written out independently here
(not by calling the function under test twice), and the CLI's text and JSON."""

from __future__ import annotations

import json

import pytest

from kvviz import claims
from kvviz.__main__ import main
from support.pages import REPO, SHARED

BY_KEY = {c.key: c for c in claims.all_claims()}


def test_every_claim_is_complete_and_links_to_a_real_page():
    assert len(BY_KEY) == 8
    for c in BY_KEY.values():
        assert c.verdict in claims.VERDICT_LABELS and c.source and c.arithmetic and c.numbers
        assert (REPO / c.page.file).is_file(), c.page.name
        # every card cites a checkable public source, or names it by title and says the address is not recorded
        assert "https://" in c.source or "address not recorded" in c.source, c.key
        assert "kvviz issue" not in c.source and "popular" not in c.source and "common" not in c.source, c.key


def test_gemma3_896mb_and_the_real_pattern():
    c = BY_KEY["gemma3-896mb"]
    per_layer_token = 2 * 4 * 256 * 2
    assert c.numbers["all_global_bytes"] == 34 * 4096 * per_layer_token == 570_425_344 == 544 * 2**20
    # 34 layers, 5 local : 1 global -> layers 5, 11, 17, 23, 29 global; 29 local layers hold 1024 tokens
    assert c.numbers["hybrid_bytes"] == (5 * 4096 + 29 * 1024) * per_layer_token == 205_520_896 == 196 * 2**20
    assert c.verdict == "wrong" and "1.65x" in c.finding and "4.57x" in c.finding


def test_gemma3_table_other_rows_hold():
    c = BY_KEY["gemma3-table-other-rows"]
    assert c.verdict == "holds"
    llama8, qwen7, llama70 = 32 * 2 * 8 * 128 * 2, 28 * 2 * 4 * 128 * 2, 80 * 2 * 8 * 128 * 2
    assert list(c.numbers.values()) == [
        4096 * llama8,
        8192 * llama8,
        4096 * qwen7,
        4096 * llama70,
        8192 * llama70,
        65536 * llama70,
    ]
    assert list(c.numbers.values()) == [512 << 20, 1 << 30, 224 << 20, 1280 << 20, 2560 << 20, 20 << 30]
    # the 20 GB is the chapter's 70B example without GQA (64 K/V heads at 8,192 tokens), not a length kvviz chose
    assert 80 * 2 * 64 * 128 * 2 * 8192 == 20 << 30 and "64 KV heads" in c.arithmetic[-1]
    assert "MiB and GiB as the chapter defines them" in c.finding


def test_published_calculator_figures():
    c = BY_KEY["published-kv-sizes"]
    per_token_70b = 80 * 2 * 8 * 128 * 2
    assert c.numbers["llama-3-70b@4096"] == 4096 * per_token_70b == 1_342_177_280
    assert c.numbers["llama-3-70b@131072"] == 131072 * per_token_70b == 42_949_672_960
    assert c.numbers["llama-3.1-405b@1"] == 126 * 2 * 8 * 128 * 2 == 516_096 == 504 * 1024
    checks = {(k.figure.model, k.figure.context_len): k.verdict for k in claims.published_figure_checks()}
    assert [checks[("llama-3-70b", n)] for n in (4096, 32768, 131072)] == ["wrong"] * 3  # all 4x
    assert checks[("llama-3-8b", 4096)] == "correct if GB means binary units"
    assert checks[("llama-3.1-70b", 131072)] == "correct"  # 42.95 decimal GB
    # UNITS_RULE: "5 GB" read as decimal first (3.73x), the binary reading (4x) in brackets
    assert c.verdict == "wrong" and "3 of 7" in c.finding and "3.73x too large; 4x if GB means GiB" in c.finding


def test_only_own_q_is_wrong_by_3x_on_gpt2():
    c = BY_KEY["only-own-q"]
    assert c.numbers == {"qkv_ops": 12 * 768 * 3 * 768, "q_only_ops": 12 * 768 * 768}
    assert c.verdict == "wrong" and "Q, K and V" in c.finding


def test_total_work_is_quadratic_in_attention():
    c = BY_KEY["total-work-o-n"]
    n = 1000
    assert c.numbers == {"cached_dots_per_head": n * (n + 1) // 2, "uncached_dots_per_head": n * (n + 1) * (n + 2) // 6}
    assert c.verdict == "partly true" and "O(n^2)" in c.finding and "ratio (N+2)/3 = 334" in c.arithmetic[1]


@pytest.mark.parametrize(
    "gpu, verdict, ms",
    [
        ("Apple M1 (8-core GPU)", "wrong", 11344.441),
        ("Apple M1 Max (32-core GPU)", "wrong", 2795.518),
        ("Apple M1 Ultra (64-core GPU)", "wrong", 1398.417),
        ("NVIDIA T4", "wrong", 456.745),
        ("NVIDIA H100 SXM", "cannot be judged", 30.019),
        ("NVIDIA A100", "cannot be judged", 95.155),
        ("AMD MI300X", "cannot be judged", 22.715),
    ],
)
def test_prefill_claim_depends_on_the_gpu(gpu, verdict, ms):
    c = claims.all_claims(gpu)[-1]
    assert c.key == "system-prompt-prefill" and c.verdict == verdict and c.numbers["ms_at_peak"] == ms
    assert c.numbers["rule_flops"] == 2 * 8_030_261_248 * 2048  # ≈ 3.3e13, the popular rule of thumb
    # exact matmul count: 2048 tokens through 32 layers (GQA 32/8 heads, SwiGLU) + causal attention, 1 logit row
    layer_linear = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336
    attention = 2 * 32 * (2048 * 2049 // 2) * 128
    assert c.numbers["exact_flops"] == 2 * (32 * (2048 * layer_linear + attention) + 4096 * 128256)
    assert round(c.numbers["exact_flops"] / c.numbers["peak_flops"] * 1000, 3) == ms
    assert "50-100% of peak" not in " ".join((c.finding, *c.arithmetic))  # no unsourced efficiency


def test_prefill_claim_is_judged_on_apple_silicon_by_default():
    """The Akunu book is about Apple Silicon. The default GPU is an Apple one, its peak and bandwidth
    cite a source by address; the verdict rests only on "no prefill beats 100% of peak" (never an assumed
    utilization), and a GPU the source never mentions is said to be one."""
    c = claims.prefill_claim()
    g = claims.GPU_COMPUTE[claims.DEFAULT_GPU]
    assert g.is_apple and c.numbers["gpu"] == claims.DEFAULT_GPU and c.verdict == "wrong"
    apple = [a for a in claims.GPU_COMPUTE.values() if a.is_apple]
    assert len(apple) >= 4 and all("https://github.com/philipturner/metal-benchmarks" in a.source for a in apple)
    assert g.peak_flops == 21_230e9 and g.bandwidth_bytes_per_s == 800e9  # M1 Ultra: F16 GFLOPS 21230, 800GB/s
    assert "https://www.apple.com/newsroom/" in g.bandwidth_source and "8 March 2022" in g.bandwidth_source
    # the fastest Apple GPU at 100% of its peak still needs far more than the claim's 100 ms: wrong at any utilization
    assert all(c.numbers["exact_flops"] / a.peak_flops * 1000 > claims.CLAIM_HIGH_MS for a in apple)
    assert "Apple Silicon" not in c.finding  # it is the source's hardware: no caveat
    assert "not the hardware it describes" in claims.prefill_claim("NVIDIA H100 SXM").finding


def test_prefill_verdict_needs_no_assumed_utilization():
    """wrong only when even 100% of peak is slower than the claim's top; otherwise the claim holds at some
    utilization kvviz has no source for, so it cannot be judged (never "holds")."""
    v = claims.prefill_verdict
    assert v(100.01) == "wrong" and v(1398.4) == "wrong"
    assert v(100.0) == v(50.0) == v(30.0) == v(12.5) == "cannot be judged"


def test_units_rule_reads_printed_units_one_way():
    assert claims.printed_bytes(896, "MB") == (896e6, 896 * 2**20)  # decimal first
    assert claims.printed_bytes(896, "MB", "binary") == (896 * 2**20, 896e6)  # the source defines MB as binary
    gemma = BY_KEY["gemma3-896mb"]
    assert "896 MB = 896 MiB" in gemma.finding and "8,388,608 bytes = 8 MB" in gemma.finding


def test_cli_text_json_and_bad_gpu(capsys):
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    assert out.count("source:") == 8 and "[WRONG] Gemma 3-4B" in out and out.startswith(claims.UNITS_RULE)
    assert main(["claims", "--json", "--gpu", "NVIDIA T4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[2]["numbers"]["all_global_bytes"] == 570_425_344 and data[-1]["verdict"] == "wrong"
    assert main(["claims", "--gpu", "TPU"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown GPU" in err


def test_seeds_own_figures_with_their_sources_and_verdicts(capsys):
    """The two seed texts' KV-cache sizes, quoted as written (with the translation beside them in
    English), cited (the interactive page by title, its address said to be unrecorded), and checked exactly."""
    zhihu, page = BY_KEY["seed-zhihu-gpt3-472mb"], BY_KEY["seed-visualiser-4gb"]
    assert zhihu.numbers["exact_bytes"] == 2 * 100 * 12288 * 96 * 2 == 471_859_200 and zhihu.verdict == "holds"
    assert zhihu.quote == claims.ZHIHU_QUOTE and "2×100×12288×96×2 Byte= 472MB" in zhihu.quote  # as written
    assert zhihu.translation == claims.ZHIHU_TRANSLATION and "472MB of GPU memory" in zhihu.translation
    assert "https://www.zhihu.com/question/596900067/answer/3040011798" in zhihu.source
    assert page.numbers["exact_bytes"] == 32 * 4096 * 4096 * 2 * 2 == 2 * 2**30 and page.verdict == "wrong"
    assert page.quote == "例:32层 × 4096长度 × 4096维 × 2 × 2B ≈ 4GB/样本" and "4GB per sample" in page.translation
    assert "'KV Cache 原理'" in page.source and "address not recorded" in page.source
    assert "1.86x" in page.finding and "2x if GB means GiB" in page.finding
    sources = SHARED / "sources"  # the quotes are the sources' own words
    if sources.is_dir():
        text = "".join(p.read_text(encoding="utf-8") for p in sources.glob("00*.txt"))
        assert claims.ZHIHU_QUOTE in text and claims.VISUALISER_QUOTE in text
    assert main(["claims", "--json"]) == 0
    data = {c["key"]: c for c in json.loads(capsys.readouterr().out)}
    assert data["seed-zhihu-gpt3-472mb"]["verdict"] == "holds" and data["seed-visualiser-4gb"]["verdict"] == "wrong"
    assert data["seed-zhihu-gpt3-472mb"]["numbers"]["exact_bytes"] == 471_859_200
    assert data["seed-zhihu-gpt3-472mb"]["translation"] == claims.ZHIHU_TRANSLATION
    assert data["seed-visualiser-4gb"]["numbers"]["exact_bytes"] == 2_147_483_648


def test_published_figures_card_gives_each_source_its_title_and_date():
    """No bare URL: each of the three sources has its title and its date (or says none is
    recorded)."""
    source = BY_KEY["published-kv-sizes"].source
    parts = source.split("; ")
    assert len(parts) == 3
    for part, title in zip(parts, claims.PUBLISHED_SOURCE_TITLES.values(), strict=True):
        assert f"'{title}'" in part and "https://" in part
        assert "date not recorded" in part or "2026" in part.split("https://")[1].split(" ", 1)[1]
    assert "(12 January 2026)" in parts[1]


@pytest.mark.slow
def test_claims_module_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, kvviz.claims; print('torch' in sys.modules, 'streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == [
        "False",
        "False",
    ]
