"""Poll stuffing, replayed: one client votes again and again with a fresh voter token (or no cookie at all) through
deploy/run_class.sh, as the script of issue 55 did (about 1,245 votes a minute, every one acknowledged). The
projector's count may move by at most the room's voters per address.

    python bench/poll_stuffing.py                      # 60 sessions, 6 at a time, the default limit (2 per address)
    python bench/poll_stuffing.py --per-address 30     # a teacher on a shared-address network allows 30

What runs: run_class.sh -n 1 --listen 127.0.0.1 on a free port block with a new SQLite file (bench/poll_load.py's
helpers); the teacher, in this process on the same store, opens a room and step 1. Then --sessions protocol-level
phones (bench/classroom_ws.Student: Streamlit's WebSocket protocol, no browser), --concurrency at a time, each a new
session on /join?room=CODE: odd ones with a fresh kvviz_voter cookie, even ones with no cookie (the page makes a
token; a script never keeps it). Each taps choice A once. All come from 127.0.0.1, which nginx forwards in
X-Real-IP: one address.

Reported: sessions, votes acknowledged ("Vote received"), votes refused and their sentences, the store's count, the
votes per minute sent; the run fails (exit 1) when the count moved by more than the limit or an acknowledged vote is
not in the count. JSON in bench/results/poll_stuffing_<per_address>.json. Localhost only; caps: 1..300 sessions,
1..16 at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from classroom_ws import Student  # noqa: E402
from poll_load import acked, class_servers, database, fixed_polls, shown_alerts  # noqa: E402

from kvviz.poll import store as poll_store  # noqa: E402


async def stuff(url: str, code: str, sessions: int, concurrency: int) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> dict:
        cookies = {"kvviz_voter": secrets.token_urlsafe(24)} if i % 2 else {}
        async with gate:
            student = Student(url, "join", f"room={code}", cookies)
            try:
                await student.open()
                # answered: the receipt, or the alert that says why not
                await student.click_key(
                    "join_choice_1_1_0", settled=lambda _s: bool(shown_alerts(student)), timeout_s=30
                )
                return {"session": i, "cookie": bool(cookies), "acked": acked(student), "alerts": shown_alerts(student)}
            except Exception as exc:  # noqa: BLE001 - reported
                return {"session": i, "cookie": bool(cookies), "acked": False, "error": f"{type(exc).__name__}: {exc}"}
            finally:
                with contextlib.suppress(Exception):
                    await student.close()

    return await asyncio.gather(*(one(i) for i in range(sessions)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument(
        "--per-address",
        type=int,
        default=poll_store.VOTERS_PER_ADDRESS,
        help="the teacher's voters per network address for this room",
    )
    ap.add_argument("--json", help="default bench/results/poll_stuffing_<per_address>.json")
    args = ap.parse_args()
    if not 1 <= args.sessions <= 300 or not 1 <= args.concurrency <= 16 or not 1 <= args.per_address <= 1000:
        ap.error("caps: 1..300 sessions, 1..16 at a time, 1..1000 per address")
    out = Path(args.json or ROOT / "bench" / "results" / f"poll_stuffing_{args.per_address}.json")
    with database("sqlite") as db_url, class_servers(db_url, 1) as (url, _run_dir, _ports):
        store = poll_store.PollStore(db_url)
        room = store.create_room()
        if args.per_address != poll_store.VOTERS_PER_ADDRESS:
            store.set_limits(room.code, room.host_key, per_address=args.per_address, class_size=None)
        store.open_step(room.code, room.host_key, fixed_polls(1))
        t0 = time.monotonic()
        tries = asyncio.run(stuff(url, room.code, args.sessions, args.concurrency))
        span_s = time.monotonic() - t0
        counted = store.voted_count(room.code, 1, 1)
        store.engine.dispose()
    acks = sum(t["acked"] for t in tries)
    refusals = Counter(a for t in tries if not t["acked"] for a in t.get("alerts", []))
    errors = [t["error"] for t in tries if "error" in t]
    result = {
        "sessions": args.sessions,
        "concurrency": args.concurrency,
        "per_address": args.per_address,
        "votes_per_minute_sent": round(args.sessions / span_s * 60),
        "acknowledged": acks,
        "counted": counted,
        "refused": dict(refusals),
        "errors": errors[:10],
        "span_s": round(span_s, 1),
        "command": " ".join(["python", "bench/poll_stuffing.py", *sys.argv[1:]]),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(
        f"{args.sessions} sessions from one address ({result['votes_per_minute_sent']} a minute): "
        f"{acks} acknowledged, the count moved by {counted} (limit {args.per_address}); "
        f"refused: {sum(refusals.values())}, errors: {len(errors)}"
    )
    for text, n in refusals.most_common(3):
        print(f"  {n} x {text}")
    print(f"(JSON: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out})")
    if counted > args.per_address or acks != counted or errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
