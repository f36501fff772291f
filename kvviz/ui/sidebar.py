"""The sidebar's model picker: the bundled, a pretrained or a random-weights model on localhost, the teacher's
list in shared mode; a link's ?model= applied before it is drawn (a bundled model at once, any other only once the
reader has seen its cost and said yes); a failed switch keeps the model in use; a line saying which mode the
server runs in."""

from __future__ import annotations

import streamlit as st

from kvviz import routes
from kvviz.i18n import N_, _
from kvviz.model import hub, loading, shared_mode
from kvviz.model.dims import GPT2_FAMILY
from kvviz.ui import url_state
from kvviz.ui.links import MODEL_SPEC_KEY, link_params
from kvviz.ui.models import (
    MODEL_NOTICE_KEY,
    cached_model,
    current_info,
    current_policy,
    model_offered,
    note_session_active,
)

_MODEL_LINK_MAX_CHARS = 1000


_KIND_KEY, _NAME_KEY, _ARCH_KEY, _SHARED_KEY = "app_model_kind", "app_model_name", "app_model_arch", "app_model_offered"
_KINDS = {  # radio option (its English label, the same in every language) -> kind (localhost mode); each bundled
    # model is a kind of its own (its spec). The radio shows _kind_label(option).
    **{f"{b.title} (offline)": name for name, b in loading.BUNDLED_MODELS.items()},
    N_("Pretrained GPT-2 (name or local folder)"): "pretrained",
    N_("GPT-2 shape with random weights"): "random",
}


def _bundled_option(title: str) -> str:
    """A bundled model's name in a model picker, in the interface language."""
    return _("{title} (offline)").format(title=_(title))


def _kind_label(option: str) -> str:
    kind = _KINDS[option]
    return _bundled_option(loading.BUNDLED_MODELS[kind].title) if kind in loading.BUNDLED_MODELS else _(option)


def _size_caption(kind: str) -> str:
    """Under a bundled model's option (kind: its spec): its size (parameters, and the weights' file); nothing under
    the others."""
    if kind not in loading.BUNDLED_MODELS:
        return ""
    weights = loading.BUNDLED_MODELS[kind].folder / "model.safetensors"
    return _("{params:,} parameters, {size} of weights").format(
        params=loading.bundled_info(name=kind).n_params, size=_memory_text(weights.stat().st_size)
    )


def _kind_of(spec: str) -> str:
    if spec.startswith(loading.RANDOM_PREFIX):
        return "random"
    return spec if spec in loading.BUNDLED_MODELS else "pretrained"


def _apply_linked_model(policy: shared_mode.SharedPolicy) -> str | None:
    """(Before the picker is drawn.) A link's ?model= becomes the session's model when it differs: a bundled model
    at once; any other is loaded only when the reader says yes (returned here, to ask: a link must never make the
    server read, or download, gigabytes its reader did not choose); one that cannot load at all (no such folder or
    shape, not in the cache of a server that cannot download it) is tried now, failing before any weight with its
    one line. A model this server does not offer is refused with one line. The current model is kept meanwhile, and
    the address bar carries the session's model, as it carries the language, once the question is settled."""
    url = url_state.of(routes.EVERY_PAGE)
    linked = url.raw_all("model")
    spec = st.session_state[MODEL_SPEC_KEY]
    if linked and linked[-1] != spec:
        wanted = linked[-1].strip()
        if not wanted or len(wanted) > _MODEL_LINK_MAX_CHARS or not model_offered(wanted):
            st.session_state[MODEL_NOTICE_KEY] = _(LINKED_MODEL_REFUSED).format(model=current_info().shown_label())
        elif wanted == spec:
            pass
        elif wanted in loading.BUNDLED_MODELS or not _could_load(wanted, policy):
            _switch_to(wanted)  # a load that fails leaves its one line (the reason; the model in use stays)
        else:
            return wanted  # asked in the sidebar; the address keeps the link's model until the reader answers
        spec = st.session_state[MODEL_SPEC_KEY]
    if linked != [spec] and (linked or spec != loading.BUNDLED):
        url.write({"model": spec})
    return None


def _could_load(spec: str, policy: shared_mode.SharedPolicy) -> bool:
    """Whether a load of `spec` could get as far as reading weights (else it fails at once, costing nothing)."""
    offered = policy.find(spec) if policy.enabled else None
    estimate = loading.estimate_load(offered.source if offered is not None else spec)
    if estimate.n_params is not None:
        return True
    return estimate.downloads and not policy.enabled and hub.hub_reachable()


def _ask_about_link(wanted: str, policy: shared_mode.SharedPolicy) -> None:
    """The question a link's model waits on: what it costs, and two buttons."""
    offered = policy.find(wanted) if policy.enabled else None
    estimate = loading.estimate_load(offered.source if offered is not None else wanted)
    model = loading.shown_spec(wanted)
    if estimate.n_params is None:
        cost = _(
            "It is not on this server: loading it downloads it from the Hugging Face hub, and its size is known "
            "only then."
        )
    else:
        cost = _("It has {params:,} parameters: loading it takes about {memory} of the server's memory.").format(
            params=estimate.n_params, memory=_memory_text(estimate.float32_bytes)
        )
    with st.container(border=True, key="app_model_link_question"):
        st.markdown(_("This link asks for the model {model}. {cost} Load it?").format(model=model, cost=cost))
        left, right = st.columns(2)
        left.button(_("Load it"), key="app_model_link_load", on_click=_confirm_link, args=(wanted,))
        right.button(
            _("Stay on {model}").format(model=current_info().shown_label()),
            key="app_model_link_stay",
            on_click=_decline_link,
        )


def _memory_text(n_bytes: int | None) -> str:
    if n_bytes is None:
        return "?"
    if n_bytes < 10 * 2**20:
        return _("{mib:,.1f} MiB").format(mib=n_bytes / 2**20)
    if n_bytes < 2**30:
        return _("{mib:,.0f} MiB").format(mib=n_bytes / 2**20)
    return _("{gib:,.1f} GiB").format(gib=n_bytes / 2**30)


def _confirm_link(wanted: str) -> None:
    """(A button callback.) The reader chose the link's model: load it (the policy is checked again there)."""
    _switch_to(wanted)
    url_state.of(routes.EVERY_PAGE).write({"model": st.session_state[MODEL_SPEC_KEY]})  # a failed load: the one in use


def _decline_link() -> None:
    url_state.of(routes.EVERY_PAGE).write({"model": st.session_state[MODEL_SPEC_KEY]})


MODE_SHARED = N_("Shared server: students may load only the models listed below")
MODE_OPEN = N_("Open server: any reader may load any model (KVVIZ_SHARED=0)")
MODE_LOCAL = N_("Local mode: only this computer can open this server")


def _mode_line(policy: shared_mode.SharedPolicy) -> None:
    """Which mode this server runs in, as a small badge under the sidebar's Model header."""
    if policy.enabled:
        st.badge(_(MODE_SHARED), icon=":material/groups:", color="green")
    elif shared_mode.listens_beyond_loopback(st.get_option("server.address")):
        st.badge(_(MODE_OPEN), icon=":material/public:", color="orange")
    else:
        st.badge(_(MODE_LOCAL), icon=":material/computer:", color="gray")


LINKED_MODEL_REFUSED = N_("The link's model is not offered on this server: you stay on {model}.")


def sidebar_model_picker() -> None:
    """Sidebar: choose the model every page uses. Localhost: bundled / any pretrained name or folder / a
    random-weights shape. Shared mode: a list of the offered models, and nothing free-form.

    Switching happens in widget callbacks: a load that fails leaves the previous model in place, and
    the widget is put back to it, with a one-line notice."""
    note_session_active()
    st.session_state.setdefault(MODEL_SPEC_KEY, loading.BUNDLED)
    policy = current_policy()
    spec = st.session_state[MODEL_SPEC_KEY]
    if not model_offered(spec):
        st.session_state[MODEL_SPEC_KEY] = loading.BUNDLED  # a forged or stale value: refuse it, load nothing
        st.session_state[MODEL_NOTICE_KEY] = _(shared_mode.NOT_OFFERED)
    asked = _apply_linked_model(policy)
    with st.sidebar:
        st.markdown("### " + _("Model"))
        _mode_line(policy)
        if asked is not None:
            _ask_about_link(asked, policy)
        if policy.enabled:
            _shared_picker(policy)
        else:
            _local_picker()
        info = current_info()
        notice = st.session_state.pop(MODEL_NOTICE_KEY, None)
        if notice:
            st.warning(notice, icon=":material/info:")
        st.caption(info.shown_label())


def _shared_picker(policy: shared_mode.SharedPolicy) -> None:
    labels = {name: _bundled_option(spec.title) for name, spec in loading.BUNDLED_MODELS.items()}
    labels |= {m.name: m.shown_label() for m in policy.offered}
    if st.session_state.get(_SHARED_KEY) != st.session_state[MODEL_SPEC_KEY]:  # first run, a forged value, or a
        st.session_state[_SHARED_KEY] = st.session_state[MODEL_SPEC_KEY]  # link's model just chosen: the real one
    st.radio(
        _("Which model"),
        list(labels),
        format_func=labels.__getitem__,
        key=_SHARED_KEY,
        captions=[_size_caption(name) for name in labels],
        on_change=lambda: _switch_to(st.session_state[_SHARED_KEY], _SHARED_KEY),
    )
    st.caption(
        _("Shared server: the teacher chose these models. One load at a time, at most {cap}.").format(
            cap=policy.cap.describe()
        )
    )


def _local_picker() -> None:
    spec = st.session_state[MODEL_SPEC_KEY]
    kind = _kind_of(spec)
    if st.session_state.get(_KIND_KEY) not in _KINDS or (
        _KINDS[st.session_state[_KIND_KEY]] != "pretrained" and _KINDS[st.session_state[_KIND_KEY]] != kind
    ):  # keep the radio on the model in use (a fallback may have changed it); "pretrained" may wait for Load
        st.session_state[_KIND_KEY] = next(label for label, k in _KINDS.items() if k == kind)
    if kind == "random":
        st.session_state[_ARCH_KEY] = spec.removeprefix(loading.RANDOM_PREFIX)
    choice = _KINDS[
        st.radio(
            _("Which model"),
            list(_KINDS),
            format_func=_kind_label,
            key=_KIND_KEY,
            captions=[_size_caption(_KINDS[option]) for option in _KINDS],
            on_change=_on_kind_change,
        )
    ]
    if choice == "pretrained":
        st.session_state.setdefault(_NAME_KEY, spec if kind == "pretrained" else "gpt2")
        st.text_input(
            _("Name or folder"),
            key=_NAME_KEY,
            max_chars=1000,
            help=_("e.g. gpt2, distilgpt2, gpt2-medium (from the Hugging Face cache), or a local folder"),
        )
        st.button(_("Load"), key="app_model_load", on_click=_on_load)
    elif choice == "random":
        st.session_state.setdefault(_ARCH_KEY, "gpt2")
        st.selectbox(
            _("Architecture"),
            list(GPT2_FAMILY),
            key=_ARCH_KEY,
            on_change=lambda: _switch_to(loading.RANDOM_PREFIX + st.session_state[_ARCH_KEY], _ARCH_KEY),
        )


def _on_kind_change() -> None:
    kind = _KINDS.get(st.session_state[_KIND_KEY])
    if kind is None:  # never expected (see keep_choices_across_languages): keep the model, redraw the radio
        return
    if kind in loading.BUNDLED_MODELS:
        _switch_to(kind, _KIND_KEY)
    elif kind == "random":
        _switch_to(loading.RANDOM_PREFIX + st.session_state.get(_ARCH_KEY, "gpt2"), _KIND_KEY)


def _on_load() -> None:
    name = st.session_state.get(_NAME_KEY, "").strip()
    if name:
        _switch_to(name)


def _switch_to(spec: str, widget_key: str | None = None) -> None:
    """(A widget callback.) Make `spec` the session's model; if it cannot be loaded, keep the previous
    model, put the widget back, and leave a one-line notice."""
    previous = st.session_state.get(MODEL_SPEC_KEY, loading.BUNDLED)
    try:
        cached_model(spec)
    except loading.ModelLoadError as exc:
        st.session_state[MODEL_NOTICE_KEY] = str(exc)
        if widget_key == _SHARED_KEY:
            st.session_state[_SHARED_KEY] = previous
        elif widget_key == _ARCH_KEY and _kind_of(previous) == "random":
            st.session_state[_ARCH_KEY] = previous.removeprefix(loading.RANDOM_PREFIX)
        elif widget_key is not None:
            st.session_state[_KIND_KEY] = next(label for label, k in _KINDS.items() if k == _kind_of(previous))
        return
    st.session_state[MODEL_SPEC_KEY] = spec
    url = url_state.of(routes.EVERY_PAGE)
    if url.holds("model") or spec != loading.BUNDLED:
        url.write({"model": spec})  # the address bar follows, so the link never switches back


NOT_ALL_ATTENTION = N_(
    "{model} keeps a fixed state instead of K/V rows in {n_linear} of its {n_layer} layers, and "
    "this page works only on models whose every layer is attention: choose another bundled model."
)


NOT_ALL_ATTENTION_COUNTS = N_(
    "{model} keeps a fixed state instead of K/V rows in {n_linear} of its {n_layer} "
    "layers; this page counts a whole generation only for models whose every layer is "
    "attention: choose another bundled model or a preset for that. Below, what one token "
    "costs in each kind of its layers."
)


def needs_all_attention(info: loading.ModelInfo, stop: bool = True, message: str = NOT_ALL_ATTENTION) -> bool:
    """For a page (or a part of one) that moves, counts or evicts K/V rows in every layer: with a hybrid model
    (kvviz.model.dims: some layers are linear attention) say so in one sentence, offer a button per bundled model
    whose every layer is attention, and end the page there (stop=True). `message` (N_-marked, the same fields):
    a page's own sentence. True when the model is all attention."""
    if info.all_attention:
        return True
    with st.container(border=True, key="app_needs_all_attention"):
        st.info(
            _(message).format(model=info.shown_label(), n_linear=len(info.linear_layers), n_layer=info.n_layer),
            icon=":material/info:",
        )
        row = st.container(horizontal=True)
        for name, spec in loading.BUNDLED_MODELS.items():
            if loading.bundled_info(name=name).all_attention:
                row.button(_bundled_option(spec.title), key=f"app_switch_{name}", on_click=_switch_to, args=(name,))
    if stop:
        st.stop()
    return False


def sidebar_navigation(sections: dict[str, list]) -> None:
    """Sidebar: a link to every page, under its section's header (the pages st.navigation routes to). Drawn by
    kvviz, not by Streamlit's navigation widget, so that the language switch sits above it (in view at 720 px), and so that
    Streamlit's own list, hidden by client.showSidebarNavigation = false, never shows the legacy pages/ files."""
    nav = st.sidebar.container(key="kvviz_nav")
    for header, pages in sections.items():
        if header:
            nav.caption(header)
        for page in pages:
            nav.page_link(page, query_params=link_params())
