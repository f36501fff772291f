"""Shared-server mode: what a student's browser may make the teacher's server load.

On whenever the server listens beyond this computer (Streamlit's server.address is not 127.0.0.1, ::1 or
localhost), off on a laptop listening on loopback only (any name, folder or random shape, no cap). The one
command to serve a class is therefore the plain one:

    KVVIZ_SHARED=1 .venv/bin/streamlit run app.py --server.address 0.0.0.0 --browser.serverAddress 192.168.1.20

(192.168.1.20: this computer's address on the room's network, the one students type; kvviz.teaching.guide explains
it to the teacher), and an environment variable overrides the address's choice either way: KVVIZ_SHARED=1 turns it on on loopback (a
server behind a proxy on the same machine), KVVIZ_SHARED=0 turns it off for a trusted network (the teacher's explicit
say-so; any other non-empty value means on).

A teacher may list the models students can pick in `.streamlit/kvviz_shared.toml` (beside Streamlit's own
config.toml, in the folder streamlit is started from; `KVVIZ_SHARED_CONFIG=/path/file.toml` points elsewhere):

    max_params = 200_000_000          # cap on one load (default 200 M = 0.75 GiB of float32 weights)
    models = [
      "gpt2",                          # a name in the server's Hugging Face cache (never downloaded)
      "random:gpt2",                   # a GPT-2 shape with random weights
      "/srv/kvviz/class-gpt2",         # a folder (absolute, or relative to where streamlit starts):
                                       # students see only its last name, "class-gpt2"
      { name = "our-gpt2", source = "/srv/kvviz/v2", label = "Our class GPT-2" },
    ]

When on: the sidebar offers only the bundled model(s) and these; the server refuses any other spec however
it arrives (a forged session-state value, another page's selectbox); nothing is downloaded; each load is
capped (kvviz.model.load_cost) and messages never show a server path (`redact`). A file that cannot be read
leaves only the bundled model(s) and is reported in the server's log, never to students.
UI-free: kvviz.ui applies the policy.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.model.dims import GPT2_FAMILY
from kvviz.model.load_cost import LoadCap
from kvviz.model.loading import BUNDLED_MODELS, RANDOM_PREFIX, shown_spec

ENV_SWITCH = "KVVIZ_SHARED"
ENV_CONFIG = "KVVIZ_SHARED_CONFIG"
DEFAULT_CONFIG = Path(".streamlit") / "kvviz_shared.toml"
DEFAULT_MAX_PARAMS = 200_000_000  # GPT-2 124M fits; gpt2-medium (355M) and larger need the teacher's say-so
MAX_NAME_CHARS = 80
NOT_OFFERED = N_("That model is not offered on this shared server; choose one from the sidebar's list.")  # show _()

_LOG = logging.getLogger(__name__)
# An absolute POSIX path ("/srv/x", "~/x") or a Windows one ("C:\x"), not the "/" inside "K/V" or a URL. It ends at a
# space, a quote or punctuation: ASCII (a colon too, so "Could not load /srv/x: ..." keeps its colon) or the full-width
# kind a Chinese message puts right after it with no space ("无法加载 /srv/x：..."); a Chinese character just before
# it does not hide it ("位于/srv/x").
_ABS_PATH = re.compile(r"(?<![A-Za-z0-9_.:/~])(?:~|[A-Za-z]:\\|/)[^\s'\"`,;:()：，。；（）、]*")


@dataclass(frozen=True)
class OfferedModel:
    """One model the teacher listed: students see `name` and `label`; only the server sees `source`."""

    name: str
    source: str  # a hub name, "random:<arch>", or an absolute folder path
    label: str  # in English; shown_label() in the interface language
    label_text: i18n.Message | None = None  # the label as kvviz wrote it; None for the teacher's own words

    def shown_label(self) -> str:
        return self.label_text.shown() if self.label_text else self.label


@dataclass(frozen=True)
class SharedPolicy:
    enabled: bool
    offered: tuple[OfferedModel, ...] = ()
    cap: LoadCap | None = None  # None: no cap (localhost use)

    def find(self, name: str) -> OfferedModel | None:
        return next((m for m in self.offered if m.name == name), None)

    def redact(self, message: str) -> str:
        """In shared mode, the message with every server path replaced: a listed folder by its name,
        anything else by 'a server folder'. Off: unchanged (a laptop user wants the path)."""
        if not self.enabled:
            return message
        for model in sorted(self.offered, key=lambda m: -len(m.source)):
            if _ABS_PATH.fullmatch(model.source):
                # as the loader shows a spec first (a long path is cut there, and the cut would read 'a server folder')
                message = message.replace(shown_spec(model.source), shown_spec(model.name))
                message = message.replace(model.source, model.name)
        return _ABS_PATH.sub(_("a server folder"), message)


LOCAL = SharedPolicy(enabled=False)


LOOPBACK = "127.0.0.1"  # the listening address of a caller outside a server (the CLI, a test): this computer only
OFF_VALUES = frozenset({"0", "false", "no", "off"})


def listens_beyond_loopback(address: str | None) -> bool:
    """Whether a server listening on `address` can be reached from another computer. None or "" is Streamlit's
    default, every interface; a host name other than localhost may resolve to any interface."""
    text = (address or "").strip().strip("[]").lower()
    if text == "localhost":
        return False
    try:
        return not ipaddress.ip_address(text).is_loopback
    except ValueError:
        return True


def shared_mode_on(environ: dict[str, str] | None = None, listen_address: str | None = LOOPBACK) -> bool:
    """KVVIZ_SHARED decides when set (only 0/false/no/off turn shared mode off); unset, the listening address does."""
    value = (os.environ if environ is None else environ).get(ENV_SWITCH, "").strip().lower()
    if value:
        return value not in OFF_VALUES
    return listens_beyond_loopback(listen_address)


def config_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env[ENV_CONFIG]).expanduser() if env.get(ENV_CONFIG) else Path.cwd() / DEFAULT_CONFIG


def current_policy(listen_address: str | None = LOOPBACK) -> SharedPolicy:
    """The policy in force now for a server listening on `listen_address` (kvviz.ui passes Streamlit's
    server.address); the switch and the file are re-read, cheaply, on every call."""
    if not shared_mode_on(listen_address=listen_address):
        return LOCAL
    path = config_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    return _policy_from_file(str(path), stamp)


_cache: dict[tuple[str, int | None], SharedPolicy] = {}


def _policy_from_file(path: str, stamp: int | None) -> SharedPolicy:
    """The policy of this version of the file (re-read when its mtime changes). Sessions run in threads: the
    policy is built in a local and returned from it, so another thread clearing the cache never loses it."""
    policy = _cache.get((path, stamp))
    if policy is None:
        policy = (
            _read_policy(Path(path))
            if stamp is not None
            else SharedPolicy(enabled=True, cap=LoadCap(DEFAULT_MAX_PARAMS))
        )
        _cache.clear()
        _cache[(path, stamp)] = policy
    return policy


def _read_policy(path: Path) -> SharedPolicy:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        _LOG.warning("kvviz shared mode: cannot read %s (%s); offering the bundled model only", path, exc)
        return SharedPolicy(enabled=True, cap=LoadCap(DEFAULT_MAX_PARAMS))
    return parse_policy(data, base=Path.cwd())


def parse_policy(data: dict[str, Any], base: Path) -> SharedPolicy:
    """A shared policy from the TOML file's content; bad entries are skipped and logged for the teacher."""
    max_params = data.get("max_params", DEFAULT_MAX_PARAMS)
    if not isinstance(max_params, int) or isinstance(max_params, bool) or max_params <= 0:
        _LOG.warning("kvviz shared mode: max_params must be a positive integer; using %d", DEFAULT_MAX_PARAMS)
        max_params = DEFAULT_MAX_PARAMS
    offered: list[OfferedModel] = []
    entries = data.get("models", [])
    for entry in entries if isinstance(entries, list) else []:
        model = _entry(entry, base)
        if model is None or model.name in {m.name for m in offered}:
            _LOG.warning("kvviz shared mode: skipping model entry %r (invalid or a repeated name)", entry)
            continue
        offered.append(model)
    return SharedPolicy(enabled=True, offered=tuple(offered), cap=LoadCap(max_params))


def _looks_like_folder(source: str) -> bool:
    return source.startswith(("/", "~", ".")) or "\\" in source or Path(source).is_absolute()


def _entry(entry: Any, base: Path) -> OfferedModel | None:
    if isinstance(entry, str):
        entry = {"source": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str) or not entry["source"].strip():
        return None
    source = entry["source"].strip()
    if _looks_like_folder(source):
        source = str((base / Path(source).expanduser()).resolve())
        name = Path(source).name
        text = i18n.Message.of(N_("{name} (a folder on this server)"), name=name)
    elif source.startswith(RANDOM_PREFIX):
        if source.removeprefix(RANDOM_PREFIX) not in GPT2_FAMILY:  # students could never load it: not offered
            return None
        arch = source.removeprefix(RANDOM_PREFIX)
        name, text = source, i18n.Message.of(N_("{arch} shape with random weights"), arch=arch)
    else:
        name, text = source, i18n.Message.of(N_("{name} (pretrained weights)"), name=source)
    name = entry.get("name", name)
    label = entry.get("label", text.english)
    if not isinstance(name, str) or not isinstance(label, str):
        return None
    name, label = name.strip(), label.strip()
    if not name or len(name) > MAX_NAME_CHARS or _ABS_PATH.match(name) or name in BUNDLED_MODELS:
        return None
    if "label" in entry or not label:  # the teacher's own words are shown as they are
        return OfferedModel(name=name, source=source, label=label or name)
    return OfferedModel(name=name, source=source, label=label, label_text=text)
