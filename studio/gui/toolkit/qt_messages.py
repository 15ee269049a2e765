"""Keep Qt's stderr for messages a user can act on.

Qt's platform plugins that manage no real windows (``offscreen``, used by ``layout-studio
snapshot``, CI and the tests; ``minimal``) do not implement ``QPlatformWindow::propagateSizeHints``,
and Qt's default implementation prints "This plugin does not support propagateSizeHints()" each
time a top-level window's minimum or maximum size changes: 13 lines per snapshot of the main
window, none of them about anything the user did (and "... does not support raise()" for a raised
floating dock). :func:`install` drops exactly those messages, and
only under those plugins; every other message reaches the handler that was there before (Qt's own,
which prints it as before).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from PySide6.QtCore import QMessageLogContext, QtMsgType, qFormatLogMessage, qInstallMessageHandler

#: The messages dropped: (platform plugin names, exact texts). ``raise()``: the Explorer floated into
#: its own window and raised (``snapshot --view explorer-window``), same cause.
NOISE = (
    frozenset({"offscreen", "minimal"}),
    frozenset({"This plugin does not support propagateSizeHints()", "This plugin does not support raise()"}),
)

Handler = Callable[[QtMsgType, QMessageLogContext, str], None]

_installed: dict[str, object] = {}


def is_noise(message: str, platform: str) -> bool:
    """Whether ``message`` from Qt under the platform plugin ``platform`` is one that :func:`install`
    drops."""
    plugins, texts = NOISE
    return platform in plugins and message.strip() in texts


def install(platform: str) -> bool:
    """Drop :data:`NOISE` from Qt's messages under ``platform`` (``QGuiApplication.platformName()``);
    returns whether a handler was installed (once per process, and only for those plugins)."""
    if platform not in NOISE[0] or _installed:
        return False
    previous: Handler | None = None

    def handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if is_noise(message, platform):
            return
        if previous is not None:
            previous(mode, context, message)
        else:  # Qt's default: the formatted message on stderr
            print(qFormatLogMessage(mode, context, message), file=sys.stderr, flush=True)

    previous = qInstallMessageHandler(handler)
    _installed["handler"] = handler
    return True
