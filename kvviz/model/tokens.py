"""A token's text as a student reads it on the stage, the strip and the labs: byte-level pieces shown by their bytes,
an empty token by its id. Plain Python over a loaded tokenizer (no torch)."""

from __future__ import annotations

import functools


def token_text(tokenizer, token_id: int) -> str:
    """Readable text of one token. A byte-level token can be part of a multi-byte character (emoji,
    non-Latin script); decoding it alone gives U+FFFD, so show its raw bytes instead, e.g. <F0 9F>.
    A token that decodes to nothing at all is shown by its id, e.g. <id 50256>."""
    text = tokenizer.decode([token_id])
    if text == "":  # a special or unused token (common in random-weight models): show its id, never nothing
        return f"<id {token_id}>"
    if "\ufffd" in text:
        raw = tokenizer.convert_ids_to_tokens(token_id)
        byte_decoder = getattr(tokenizer, "byte_decoder", None) or _gpt2_byte_decoder()
        data = bytes(byte_decoder[c] for c in raw if c in byte_decoder)
        return "<" + " ".join(f"{b:02X}" for b in data) + ">"
    return text


@functools.lru_cache(maxsize=1)
def _gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's byte <-> printable-character table (bytes_to_unicode), inverted."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}
