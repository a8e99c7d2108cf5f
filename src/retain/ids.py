"""Identifiers sortable by creation: ULIDs (48-bit milliseconds, 80 random bits,
Crockford base32, 26 characters).

Within one millisecond the random part is incremented, so ids made by one
process are strictly increasing even when the clock stands still.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_MAX = (1 << 80) - 1


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


class IdFactory:
    """Makes monotonic ULIDs from the instants it is given."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def new(self, moment: datetime) -> str:
        ms = int(moment.timestamp() * 1000)
        with self._lock:
            if ms <= self._last_ms:
                ms = self._last_ms
                self._last_random += 1
                if self._last_random > _RANDOM_MAX:
                    ms += 1
                    self._last_random = int.from_bytes(os.urandom(10), "big") >> 1
            else:
                self._last_random = int.from_bytes(os.urandom(10), "big") >> 1
            self._last_ms = ms
            return _encode(ms, 10) + _encode(self._last_random, 16)
