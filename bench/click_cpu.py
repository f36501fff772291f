"""Server CPU per Next-token click on the step page, one student at a time (the classroom figure, without the class).

    python bench/click_cpu.py --url http://127.0.0.1:8501 [--clicks 60] [--block 10] [--students 3]

Speaks Streamlit's WebSocket protocol as bench/classroom_ws.py does (no browser): each student opens the step
page, prefills its prompt, then clicks Next token `--clicks` times, one click after the last has finished (every
6th click Back, as in the classroom test). The server's CPU (user + system, all threads, /proc/<pid>/stat) is read
around each block of `--block` clicks: the kernel counts it in ticks of 10 ms, so one click's ~45 ms is read as a
block's sum. Reports the median and the spread of ms per click over the blocks, and per click the messages and
bytes the server sent, the 1-minute load and the core count. One student at a time: the figure is the server's
cost of a click, not a queue's; the classroom test (bench/classroom_load.py, `server_cpu_ms_per_click`) gives the
same figure with a whole class, session starts and prefills included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_load import cpu_s  # noqa: E402
from classroom_session import BUTTONS, PROMPT_LABEL, session_prompt  # noqa: E402
from classroom_ws import STEP_PAGE, Student  # noqa: E402


class CountingStudent(Student):
    """A Student that counts the ForwardMsgs and bytes it receives."""

    def __init__(self, url: str, page_name: str):
        super().__init__(url, page_name)
        self.messages, self.bytes = 0, 0

    async def open(self) -> None:
        await super().open()
        recv = self.ws.recv

        async def counted(*args, **kwargs):
            data = await recv(*args, **kwargs)
            self.messages, self.bytes = self.messages + 1, self.bytes + len(data)
            return data

        self.ws.recv = counted


async def one_student(url: str, index: int, clicks: int, block: int, port: str) -> dict:
    student = CountingStudent(url, STEP_PAGE)
    await student.open()
    try:
        await student.set_text(PROMPT_LABEL, session_prompt(index))
        await student.click(BUTTONS["prefill"])
        for _ in range(3):  # warm-up: this session's first figures
            await student.click(BUTTONS["next"])
        ms_per_click, msgs, sent = [], [], []
        done = 0
        while done < clicks:
            before, m0, b0 = cpu_s([int(port)])[port], student.messages, student.bytes
            for i in range(block):
                action = "back" if (done + i) % 6 == 5 else "next"
                finished_ms, _ = await student.click(BUTTONS[action])
                if finished_ms is None:
                    raise RuntimeError(f"click {done + i}: the run did not finish")
            after = cpu_s([int(port)])[port]
            ms_per_click.append(1000 * (after - before) / block)
            msgs.append((student.messages - m0) / block)
            sent.append((student.bytes - b0) / block)
            done += block
        return {
            "ms_per_click": ms_per_click,
            "messages_per_click": statistics.median(msgs),
            "bytes_per_click": statistics.median(sent),
        }
    finally:
        await student.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8501")
    parser.add_argument("--clicks", type=int, default=60, help="clicks per student (at most 600)")
    parser.add_argument("--block", type=int, default=10, help="clicks per CPU reading")
    parser.add_argument("--students", type=int, default=3, help="students, one after another (at most 20)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    host = urlparse(args.url).hostname
    if host not in ("127.0.0.1", "localhost"):
        parser.error("localhost only")
    if not (1 <= args.clicks <= 600 and 1 <= args.block <= args.clicks and 1 <= args.students <= 20):
        parser.error("--clicks 1..600, --block 1..clicks, --students 1..20")
    port = str(urlparse(args.url).port or 80)
    if cpu_s([int(port)])[port] is None:
        parser.error(f"no server process found listening on port {port} (this machine's only)")
    load_before = os.getloadavg()[0]
    runs = [asyncio.run(one_student(args.url, i, args.clicks, args.block, port)) for i in range(args.students)]
    blocks = [ms for r in runs for ms in r["ms_per_click"]]
    q = statistics.quantiles(blocks, n=4) if len(blocks) > 1 else [blocks[0]] * 3
    report = {
        "url": args.url,
        "students": args.students,
        "clicks_per_student": args.clicks,
        "block": args.block,
        "server_cpu_ms_per_click": {
            "median": round(statistics.median(blocks), 1),
            "q1": round(q[0], 1),
            "q3": round(q[2], 1),
            "min": round(min(blocks), 1),
            "max": round(max(blocks), 1),
            "blocks": len(blocks),
        },
        "messages_per_click": statistics.median(r["messages_per_click"] for r in runs),
        "bytes_per_click": round(statistics.median(r["bytes_per_click"] for r in runs)),
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cores": os.cpu_count(),
    }
    c = report["server_cpu_ms_per_click"]
    print(
        f"server CPU per click: median {c['median']} ms (middle half {c['q1']}-{c['q3']}, "
        f"range {c['min']}-{c['max']}, {c['blocks']} blocks of {args.block}); "
        f"{report['messages_per_click']:.0f} messages, {report['bytes_per_click']:,} bytes a click; "
        f"load {report['load_1min'][0]} -> {report['load_1min'][1]} on {report['cores']} cores"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
