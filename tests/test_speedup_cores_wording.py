"""The speed-up header's thread reason never calls a busy machine's floor of one thread a free core
(at load 6.8 on 2 cores, not "1 of 2 cores free")."""

from __future__ import annotations

from kvviz.speedup import machine


def test_a_busy_machine_is_not_said_to_have_a_free_core():
    cores = machine.max_threads()
    threads, why = machine.default_thread_count(0, load_1min=cores + 4.8)
    assert threads == 1 and "free" in why and "no core free" in why and f"{cores + 4.8:.2f}" in why
    threads, why = machine.default_thread_count(0, load_1min=0.0)
    assert why.startswith(f"{threads} of {cores} cores free")
