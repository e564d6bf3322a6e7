"""The watchdog's log: each line stamped with its clock, to stdout and to the data disk's log file."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

try:
    from instance.clock import Clock
    from instance.watchdog_defaults import DEFAULTS, log, stamp
except ImportError:  # on the instance: the other tools are installed next to this file
    from clock import Clock  # type: ignore[no-redef]
    from watchdog_defaults import DEFAULTS, log, stamp  # type: ignore[no-redef]


class _ClockFormatter(logging.Formatter):
    def __init__(self, clock: Clock):
        super().__init__("%(asctime)s %(message)s")
        self.clock = clock

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging API
        return stamp(self.clock.now())


class _LogFile(logging.Handler):
    """Appends to ``<mount>/logs/watchdog.log`` once the data disk is mounted, to /var/log before that."""

    def __init__(self, paths: list[str]):
        super().__init__()
        self.paths = paths

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record) + "\n"
        for path in self.paths:
            if os.path.isdir(os.path.dirname(path)):
                try:
                    with open(path, "a", encoding="utf-8") as fh:
                        fh.write(line)
                    return
                except OSError:
                    continue


def configure_logging(settings: dict[str, Any], clock: Clock) -> None:
    merged = {**DEFAULTS, **settings}
    paths = [merged["log_file"]] if merged["log_file"] else [
        os.path.join(merged["mount_point"], "logs", "watchdog.log"),
        "/var/log/gpulease-watchdog.log",
    ]
    formatter = _ClockFormatter(clock)
    log.handlers.clear()
    for handler in (logging.StreamHandler(sys.stdout), _LogFile(paths)):
        handler.setFormatter(formatter)
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
