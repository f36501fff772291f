"""kvviz's glossary: one definition per term, in the words every page and tooltip uses (no Streamlit, no torch).

pages/glossary.py shows it, one anchored entry per term (?term=... filters to it); `help_text(term)` gives a
tooltip in the same words, so a page's help= and the glossary never drift; pages draw a term as a link to the
glossary with that tooltip (`st.page_link(routes.GLOSSARY.file, query_params=routes.GLOSSARY.query(term=...),
help=help_text(...))`).

The glossary is also kvviz's one English-Chinese term table: each Term carries its Chinese name (`zh`),
the word every Chinese page, tooltip and catalog entry uses for it; VOCABULARY holds the rest of the translation's
terminology (words with no entry of their own): a word is in one or the other, never both. A Term's
`name` stays English (the key pages link with, `?term=`); its definition is marked for the catalog (N_) and
translated where it is shown (`definition_text`, `help_text`), in the session's language.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvviz import i18n, routes
from kvviz.i18n import N_, _


@dataclass(frozen=True)
class Term:
    name: str  # English, the key (?term=, lesson steps)
    zh: str  # its Chinese name, as every Chinese page writes it (the term table's Chinese column)
    definition: str  # markdown, a few sentences for a student (English source; N_-marked, shown through _())
    see: routes.Route | None = None  # the kvviz page where it is live, None if none
    also: tuple[str, ...] = ()  # other names for the same idea (searchable)

    @property
    def anchor(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


TERMS: tuple[Term, ...] = (
    Term(
        "Token",
        "token",
        N_(
            "A piece of text the model reads as one unit: a word, part of a word, or punctuation. A tokenizer "
            "splits a word it has no token for: kvviz's bundled model, with its own {bundled_vocab:,}-token "
            "vocabulary, reads ' green' as {bundled_green} ({bundled_green_n} tokens), while GPT-2's "
            "{gpt2_vocab:,}-token vocabulary has many more whole words. A space belongs to the token after it. Each "
            "token has a **position**, counted from 0."
        ),
        routes.STEP_THROUGH,
    ),
    Term(
        "Query, key, value (Q, K, V)",
        "查询（Q）、键（K）、值（V）",
        N_(
            "In every layer, each token's whole hidden vector is projected into a **query** for every query "
            "head and a **key** and a **value** for every K/V head, each of head_dim numbers (with grouped-query "
            "attention several query heads share one K/V head). The newest token's **query** is scored against the **keys** of every "
            "token so far (its own included); the softmax of the scores weights an average of their **values**."
        ),
        routes.STEP_THROUGH,
        ("Q", "K", "V", "query", "key", "value", "查询", "键", "值"),
    ),
    Term(
        "Attention head",
        "注意力头",
        N_(
            "One of several attention computations that run side by side in a layer, each with its own "
            "query of head_dim numbers. In multi-head attention each head also has its own key and value; with GQA "
            "or MQA several query heads share one K/V head's keys and values. Every head's projection reads the "
            "token's whole hidden vector: the projection's output is split into heads, not the hidden vector. Heads "
            "learn different jobs (previous-token, first-token, "
            "induction)."
        ),
        routes.ATTENTION_PATTERNS,
    ),
    Term(
        "head_dim",
        "head_dim（每个头的维度）",
        N_(
            "The length of one head's query, key and value vectors, a number the model's config sets. Most "
            "models choose hidden size / query heads (768 / 12 = 64 in GPT-2 small), but that is a convention, not "
            "the definition: Gemma-2-9B has {gemma2_hidden:,} / {gemma2_heads} = {gemma2_split} but head_dim "
            "{gemma2_head_dim}, Gemma-3-4B {gemma3_hidden:,} / {gemma3_heads} = {gemma3_split} but head_dim "
            "{gemma3_head_dim}. One cached K row of one head holds head_dim numbers."
        ),
        routes.STEP_THROUGH,
    ),
    Term(
        "KV cache",
        "KV 缓存",
        N_(
            "The keys and values of every token processed so far, kept in memory for every layer and K/V "
            "head, so that each new token computes only its own row instead of recomputing all of them. Shape per "
            "layer: [batch, kv_heads, seq_len, head_dim]. It is exact: a cached run gives the same tokens as an "
            "uncached one. A hybrid model keeps it only in its attention layers; its other layers keep a fixed "
            "state."
        ),
        routes.STEP_THROUGH,
        ("past_key_values", "DynamicCache", "key-value cache", "键值缓存"),
    ),
    Term(
        "Prefill",
        "预填充",
        N_(
            "The first forward pass: the whole prompt at once. It writes one K row and one V row per prompt "
            "token into every layer's cache, and predicts the first new token."
        ),
        routes.STEP_THROUGH,
    ),
    Term(
        "Decode step",
        "解码步",
        N_(
            "Each later forward pass: it feeds only the newest token, appends its K and V row to every "
            "layer's cache and reads all the cached rows to predict the next token."
        ),
        routes.STEP_THROUGH,
    ),
    Term(
        "Dot product",
        "点积",
        N_(
            "One attention score q · k: multiply a query and a key number by number and add up the "
            "head_dim products. A cached step computes one row of them per head (one per key, its own included); "
            "an uncached step recomputes the whole triangle. kvviz counts the causal pairs L(L+1)/2; eager attention "
            "computes all L x L and masks the future ones."
        ),
        routes.ATTENTION_OPS,
        ("QK^T", "attention score", "注意力分数"),
    ),
    Term(
        "Causal mask",
        "因果掩码",
        N_(
            "A token may attend only to itself and earlier tokens, never to later ones: the attention "
            "matrix is a triangle. This is why earlier K and V never change, and why caching them is exact."
        ),
        routes.ATTENTION_PATTERNS,
    ),
    Term(
        "Induction head",
        "归纳头（复制头）",
        N_(
            "A head that copies: when the newest token appeared earlier, it attends to the token that "
            "came right *after* that earlier occurrence, so the model can predict it again. It is why any old row "
            "of the cache may matter."
        ),
        routes.ATTENTION_PATTERNS,
        ("copying head", "复制头", "copy head"),
    ),
    Term(
        "MHA, GQA, MQA",
        "多头注意力（MHA）、分组查询注意力（GQA）、多查询注意力（MQA）",
        N_(
            "Multi-head attention (MHA) gives every query head its own K/V head. Grouped-query "
            "attention (GQA) lets a group of query heads share one K/V head (Llama-3-8B: 32 query heads, 8 K/V "
            "heads), shrinking the cache by the group size. Multi-query attention (MQA) shares a single K/V head "
            "among all of them."
        ),
        routes.MEMORY_BUDGET,
        (
            "grouped-query attention",
            "multi-query attention",
            "multi-head attention",
            "多头注意力",
            "分组查询注意力",
            "多查询注意力",
        ),
    ),
    Term(
        "MLA",
        "多头潜在注意力（MLA）",
        N_(
            "Multi-head latent attention (DeepSeek-V2/V3): the cache stores one small compressed latent vector "
            "per token and layer (plus a small shared positional key) instead of full K and V per head; the heads' "
            "keys and values are rebuilt from it."
        ),
        routes.MEMORY_BUDGET,
    ),
    Term(
        "FLOP",
        "FLOP（浮点运算）",
        N_(
            "One floating-point operation. A multiply-add counts as 2 FLOP; kvviz's op counts count it as one "
            "op (so FLOP = 2 x ops). FLOP/s (FLOPS) is a rate: how many per second a chip can do at its peak."
        ),
        routes.ATTENTION_OPS,
        ("FLOPS", "FLOP/s"),
    ),
    Term(
        "GEMV, GEMM",
        "矩阵-向量乘法（GEMV）、矩阵乘法（GEMM）",
        N_(
            "General matrix-vector multiply (GEMV) and matrix-matrix multiply (GEMM). A cached decode step "
            "multiplies each weight matrix by one token's vector: GEMVs, which read every weight for very little "
            "arithmetic. An uncached pass or a prefill multiplies by many tokens at once: GEMMs, which reuse each "
            "weight many times."
        ),
        routes.SPEEDUP,
    ),
    Term(
        "Arithmetic intensity",
        "算术强度",
        N_(
            "FLOP done per byte read from memory. A GEMV does about 2 FLOP per weight it reads, so per byte "
            "that is 2 / (bytes per weight): {fp32_intensity} FLOP/byte in fp32, {fp16_intensity} in fp16 (low "
            "intensity: memory-bound); a GEMM over n tokens does about 2n FLOP per weight (high: compute-bound)."
        ),
        routes.SPEEDUP,
    ),
    Term(
        "Roofline",
        "Roofline 模型",
        N_(
            "A chart of a chip's two ceilings: FLOP/s is capped by the compute peak, and by memory bandwidth "
            "x arithmetic intensity. Low-intensity work (a decode step) sits under the sloped memory roof, "
            "high-intensity work (prefill) under the flat compute roof."
        ),
        routes.SPEEDUP,
        ("roofline model", "屋顶线", "屋顶模型", "带宽上限", "算力上限"),
    ),
    Term(
        "Overhead",
        "固定开销",
        N_(
            "Time a step pays whatever its size: Python, PyTorch's per-operator dispatch, and on a GPU the "
            "CPU's time to launch each kernel. For a small model a cached step is mostly overhead, so it is far "
            "less than the op ratio faster."
        ),
        routes.SPEEDUP,
        ("fixed cost", "开销", "dispatch"),
    ),
    Term(
        "Paged blocks",
        "分页块",
        N_(
            "How serving engines (vLLM's PagedAttention) store the cache: fixed-size blocks of, say, 16 "
            "tokens, allocated as a sequence grows and shared between sequences with a common prefix, instead of "
            "one buffer pre-allocated for the maximum length."
        ),
        routes.INTERNALS_PAGING,
        ("PagedAttention", "block table", "paging", "分页注意力", "块表"),
    ),
    Term(
        "Sliding window",
        "滑动窗口",
        N_(
            "A layer that attends only to the last W tokens (Mistral; Gemma's local layers), so its cache "
            "stops growing. transformers keeps W - 1 rows between steps (the newest token is attended to before it "
            "is stored): the memory page counts those rows layer by layer and gives the peak during a step, W rows, "
            "beside them."
        ),
        routes.INTERNALS_WINDOW,
        ("sliding window attention", "SWA", "滑窗", "local attention", "局部注意力"),
    ),
    Term(
        "Chunked attention",
        "分块注意力",
        N_(
            "A layer whose tokens attend only within their own chunk of C tokens (Llama 4's local layers, "
            "`attention_chunk_size`): a new chunk starts fresh, so the layer's cache never holds more than one chunk. "
            "transformers keeps C - 1 rows, as for a sliding window; the two differ in the mask, not in the cache."
        ),
        routes.MEMORY_BUDGET,
        ("attention_chunk_size", "chunked local attention", "分块局部注意力"),
    ),
    Term(
        "Linear attention",
        "线性注意力",
        N_(
            "A layer that keeps no K/V rows: it folds each new token's key and value into a fixed-size **state** "
            "(one d_k x d_v matrix per head in Gated DeltaNet, Kimi's KDA and MiniMax's lightning attention) and "
            "reads the query against that state. Its cache is the same size after 10 tokens or a million, and its "
            "work per token is constant; what it cannot do is look back at one exact earlier token."
        ),
        routes.MEMORY_BUDGET,
        ("linear_attention", "linear-attention layer"),
    ),
    Term(
        "State-space model (SSM)",
        "状态空间模型（SSM）",
        N_(
            "A layer that runs a recurrence over the sequence (Mamba, Mamba-2; Griffin's RG-LRU) and keeps only "
            "its current state plus the last few inputs of a short convolution: a fixed number of bytes per sequence, "
            "whatever the length. transformers keeps the recurrent state in float32 even in a bf16 model."
        ),
        routes.MEMORY_BUDGET,
        ("SSM", "state space model"),
    ),
    Term(
        "Short convolution",
        "短卷积",
        N_(
            "A causal convolution over the last few positions (4 in the bundled hybrid) applied to q, k and v before "
            "the linear attention; its state is those last inputs, `[channels, kernel]` numbers."
        ),
        routes.STEP_THROUGH,
        ("conv1d", "short conv"),
    ),
    Term(
        "Hybrid model",
        "混合模型",
        N_(
            "A model that mixes layer kinds: a few attention layers whose K/V grows with the context, and "
            "linear-attention or SSM layers with a fixed state (Qwen3-Next: 1 attention layer in 4; Jamba: 1 in 8; "
            "Granite-4.0-H, Nemotron-H, Kimi Linear). Its cache is a fixed part plus a smaller growing part; a "
            "layer may also hold both (Falcon-H1)."
        ),
        routes.MEMORY_BUDGET,
        ("hybrid models",),
    ),
    Term(
        "Indexer",
        "索引器",
        N_(
            "In DeepSeek V3.2's sparse attention, a small extra attention that scores every cached token and "
            "picks the top ones the real attention reads. It caches a key of its own per token per layer "
            "(`index_head_dim` numbers) beside the MLA latent, so the cache grows a little faster than plain MLA's."
        ),
        routes.MEMORY_BUDGET,
        ("DSA", "lightning indexer", "index_head_dim"),
    ),
    Term(
        "Quantized cache",
        "量化缓存",
        N_(
            "Storing K and V in 8 or 4 bits instead of 16 or 32, with an fp16 scale and zero point per group "
            "of {group} numbers, for a small error in attention. Counting those, int8 takes {int8_fp16:.0%} of "
            "fp16's bytes and int4 {int4_fp32:.1%} of fp32's (a cache {int8_fp16_x:.2f} to {int4_fp32_x:.1f} times "
            "smaller); the recent tokens transformers keeps unquantized (up to {residual} of them) shrink the saving "
            "further."
        ),
        routes.INTERNALS_QUANT,
        ("KV cache quantization", "int8", "int4", "KV 量化", "缓存量化"),
    ),
    Term(
        "Eviction",
        "驱逐",
        N_(
            "Throwing rows out of the KV cache to keep it within a budget: the model then attends only to the rows "
            "left. A policy decides which rows go: the oldest (a sliding window), all but the first few and the newest "
            "(StreamingLLM), those that drew the least attention (H2O, TOVA, SnapKV) or the least on a re-read of the "
            "context (KVzip), the keys most like the others (KeyDiff); or it keeps every row only in the heads that "
            "retrieve (DuoAttention). The bytes shrink only when the rows leave the tensors; masking them saves "
            "nothing."
        ),
        routes.INTERNALS_EVICTION,
        ("KV cache eviction", "cache eviction", "token eviction", "KV 驱逐", "缓存驱逐"),
    ),
    Term(
        "Attention sink",
        "注意力汇聚",
        N_(
            "The first tokens of a sequence, which many heads attend to heavily whatever they say: softmax must put "
            "its weight somewhere, and the first rows, seen by every query, become the place. StreamingLLM keeps them "
            "(S = 4) when it evicts, because a window that drops them changes every head's attention."
        ),
        routes.INTERNALS_EVICTION,
        ("attention sinks", "sink token", "sink tokens", "StreamingLLM"),
    ),
    Term(
        "Heavy hitter",
        "重要 token（heavy hitter）",
        N_(
            "A cached row that receives a large share of the attention summed over the queries so far. H2O "
            "keeps the heavy hitters (and a recent window) when it evicts; accumulated attention favours early rows, "
            "which more queries have seen."
        ),
        routes.INTERNALS_EVICTION,
        ("heavy hitters", "heavy-hitter oracle"),
    ),
    Term(
        "StaticCache",
        "静态缓存（StaticCache）",
        N_(
            "transformers' cache that allocates K and V for a fixed maximum length up front (one buffer per "
            "layer, filled as tokens arrive) instead of growing like DynamicCache. Its shape never changes, so the "
            "forward pass can be compiled (torch.compile); the price is the memory of the full length from the first "
            "token."
        ),
        routes.MEMORY_BUDGET,
        ("static cache", "静态缓存"),
    ),
    Term(
        "Speculative decoding",
        "推测解码",
        N_(
            "A small **draft model** proposes several tokens; the large model checks them all in one forward "
            "pass (like a short prefill over its KV cache) and keeps the longest run it agrees with, plus one token "
            "of its own. With greedy decoding the output is the large model's own (with sampling, the same "
            "distribution); rejected tokens' rows are dropped from the "
            "cache (a rollback)."
        ),
        None,
        ("assisted generation", "投机解码", "speculative sampling"),
    ),
    Term(
        "Prefix caching",
        "前缀复用（前缀缓存）",
        N_(
            "Reusing the cached rows of a shared beginning (a system prompt) across requests, so only "
            "the new part is prefilled."
        ),
        routes.INTERNALS_PREFIX,
        ("prefix reuse", "prefix cache", "prompt caching", "前缀缓存", "前缀复用", "RadixAttention"),
    ),
    Term(
        "Bytes: GB and GiB",
        "字节：GB 与 GiB",
        N_(
            "kvviz's one rule: GB, MB, KB are decimal (10^9, 10^6, 10^3 bytes); GiB, MiB, KiB are "
            "binary (2^30, 2^20, 2^10). A figure printed as 'GB' is read as decimal first; when only the binary "
            "reading matches, kvviz says so."
        ),
        routes.MEMORY_BUDGET,
        ("GiB", "MiB", "GB", "MB"),
    ),
)

# The rest of the translation's terminology (the term table's words without a glossary entry of their own):
# English -> Chinese, used everywhere in the catalog. A word that is a Term's name (or one of its parts or other
# names) is written in its Term only, one home (tests/test_i18n_glossary.py).
VOCABULARY: dict[str, str] = {
    "tokenizer": "分词器",
    "prompt": "提示词",
    "decode": "解码",
    "autoregressive": "自回归",
    "generation": "生成",
    "step": "步",
    "attention": "注意力",
    "attention weights": "注意力权重",
    "score": "分数",
    "layer": "层",
    "head": "头",
    "K/V head": "KV 头",
    "matrix multiplication": "矩阵乘法",
    "matrix-vector": "矩阵-向量乘法",
    "GPU memory": "显存",
    "memory (RAM)": "内存",
    "context length": "上下文长度",
    "context window": "上下文窗口",
    "sequence": "序列",
    "position": "位置",
    "embedding": "嵌入",
    "hidden state": "隐藏状态",
    "logits": "logits",
    "probability": "概率",
    "next token": "下一个 token",
    "greedy": "贪心",
    "sampling": "采样",
    "temperature": "温度",
    "top-k": "top-k",
    "rollback": "回滚",
    "step back": "退回上一步",
    "projection": "投影",
    "MLP": "MLP（前馈层）",
    "speed-up": "加速比",
    "throughput": "吞吐量",
    "latency": "延迟",
    "benchmark": "基准测试",
    "batch": "批",
    "batch size": "批大小",
    "bandwidth": "带宽",
    "memory-bound": "访存受限",
    "compute-bound": "计算受限",
    "quantization": "量化",
    "paged": "分页",
    "block": "块",
    "draft model": "草稿模型",
    "acceptance rate": "接受率",
    "cross-attention": "交叉注意力",
    "encoder": "编码器",
    "decoder": "解码器",
    "inside the noise": "在噪声范围内",
    "median": "中位数",
    "spread": "波动范围",
    "interquartile range": "四分位距",
    "load (average)": "负载",
    "lesson": "课程",
    "hint": "提示",
    "worked answer": "详解",
    "teacher": "老师",
    "student": "学生",
    "presenter mode": "演示模式",
    "glossary": "术语表",
    "claim": "说法",
    "verdict": "结论",
    "bundled model": "内置模型",
    "weights": "权重",
    "parameters": "参数",
    "dtype": "dtype（数据类型）",
    "What you are seeing": "怎么看这张图",
    "cached": "使用缓存",
    "uncached": "不使用缓存",
    "recompute": "重新计算",
    "flat engine": "扁平引擎",
    "row": "行",
    "column": "列",
    "evict": "驱逐",
    "budget": "预算",
    "copy test": "复制测试",
}


def _norm(text: str) -> str:
    """What a reader's typing and a name share: case, spaces, hyphens and underscores aside ("KV-Cache",
    "kv cache" and "KV缓存" are one name)."""
    return re.sub(r"[\s\-_]+", "", text.strip().lower())


def _chinese_names(term: Term) -> list[str]:
    """A term's Chinese names: "前缀复用（前缀缓存）" -> 前缀复用, 前缀缓存; "查询（Q）、键（K）、值（V）" -> 查询, 键, 值."""
    names = []
    for part in term.zh.split("、"):
        names.append(re.sub(r"\s*[(（][^)）]*[)）]", "", part).strip())
        names += [a.strip() for a in re.findall(r"[(（]([^)）]*)[)）]", part)]
    return [n for n in names if n]


def find(word: str) -> Term | None:
    """The term named `word` (its English or Chinese name, or one of its other names), case, spaces and hyphens
    aside."""
    w = _norm(word)
    if not w:
        return None
    for t in TERMS:
        if w in (_norm(n) for n in (t.name, t.zh, *_chinese_names(t), *t.also)):
            return t
    return None


def display_name(term: Term) -> str:
    """The term's name in the current language: English "KV cache"; Chinese "KV 缓存（KV cache）", the English
    name beside it in full-width brackets, unless the Chinese name already says it ("Roofline 模型") or carries
    the English in its own brackets ("查询（Q）、键（K）、值（V）"); "归纳头（复制头，Induction head）": never two brackets
    side by side."""
    if i18n.current() != i18n.CHINESE:
        return term.name
    if term.name.lower() in term.zh.lower() or re.search(r"（[A-Za-z]", term.zh):
        return term.zh
    if term.zh.endswith("）"):
        return f"{term.zh[:-1]}，{term.name}）"
    return f"{term.zh}（{term.name}）"


BUNDLED_TOKENIZER = Path(__file__).resolve().parents[1] / "assets" / "bundled" / "tokenizer.json"


@functools.lru_cache(maxsize=1)
def figures() -> dict[str, Any]:
    """The numbers the definitions quote, computed from kvviz's own sources (the bundled tokenizer, the presets,
    the cache byte count, the installed transformers' QuantizedLayer defaults), never typed into a sentence."""
    from tokenizers import Tokenizer  # the bundled tokenizer (no torch, no transformers)

    from kvviz.memory import KVConfig
    from kvviz.memory.dtypes import DEFAULT_QUANT_GROUP, DTYPES, transformers_quantized_defaults
    from kvviz.memory.presets import get_preset

    tok = Tokenizer.from_file(str(BUNDLED_TOKENIZER))
    green = [tok.decode([i]) for i in tok.encode(" green").ids]
    gemma2, gemma3 = get_preset("gemma-2-9b").shape, get_preset("gemma-3-4b").shape

    def per_layer(dtype: str) -> int:  # one token, one layer, one K/V head of head_dim 128
        return KVConfig(1, 1, 1, 128, dtype, quant_group_size=DEFAULT_QUANT_GROUP).bytes_per_token_per_layer

    residual = transformers_quantized_defaults().get("residual_length", 0)
    return {
        "bundled_vocab": tok.get_vocab_size(),
        "bundled_green": " + ".join(repr(t) for t in green),
        "bundled_green_n": len(green),
        "gpt2_vocab": get_preset("gpt2").shape.vocab_size,
        "gemma2_hidden": gemma2.n_embd,
        "gemma2_heads": gemma2.n_head,
        "gemma2_split": gemma2.n_embd // gemma2.n_head,
        "gemma2_head_dim": gemma2.head_dim,
        "gemma3_hidden": gemma3.n_embd,
        "gemma3_heads": gemma3.n_head,
        "gemma3_split": gemma3.n_embd // gemma3.n_head,
        "gemma3_head_dim": gemma3.head_dim,
        "fp32_intensity": f"{2 / (DTYPES['fp32'].bits / 8):g}",
        "fp16_intensity": f"{2 / (DTYPES['fp16'].bits / 8):g}",
        "group": DEFAULT_QUANT_GROUP,
        "int8_fp16": per_layer("int8") / per_layer("fp16"),
        "int4_fp32": per_layer("int4") / per_layer("fp32"),
        "int8_fp16_x": per_layer("fp16") / per_layer("int8"),
        "int4_fp32_x": per_layer("fp32") / per_layer("int4"),
        "residual": max(residual - 1, 0),
    }


def definition_text(term: Term) -> str:
    """The term's definition in the current language, its computed numbers filled in (figures())."""
    return _(term.definition).format(**figures())


def matches(term: Term, needle: str) -> bool:
    """Whether a search box's text finds this term: its English or Chinese name, its other names, or its
    definition (in English, and in the current language). A text that is exactly a term's English name (the lesson's
    links, ?term=head_dim) finds that term only: the link lands on its entry, not on a list where it comes third."""
    n = needle.strip().lower()
    if not n:
        return True
    if any(n == t.name.lower() for t in TERMS):  # the English name a link carries (a Chinese search still lists)
        return n == term.name.lower()
    named = find(needle)
    if named is not None and named is term:  # a name or alias typed as readers write it (KV Cache, 复制头)
        return True
    with i18n.language(i18n.CHINESE):  # a Chinese word finds its term whichever language the page is in
        chinese = definition_text(term)
    haystack = (term.name, term.zh, term.definition, definition_text(term), chinese, *term.also)
    squeezed = _norm(needle)  # empty for a needle of hyphens and underscores alone: that matches as typed only
    return any(n in h.lower() or (squeezed and squeezed in _norm(h)) for h in haystack)


def help_text(word: str) -> str:
    """A tooltip in the glossary's words, in the current language, ending with where the full entry lives."""
    term = find(word)
    if term is None:
        raise KeyError(word)
    return _("**{name}.** {definition}\n\n(From the Glossary page: click to open it.)").format(
        name=display_name(term), definition=definition_text(term)
    )
