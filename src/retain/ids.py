"""Identifiers sortable by creation: ULIDs (48-bit milliseconds, 80 random bits,
Crockford base32, 26 characters).

Within one millisecond the random part is incremented, so ids made by one
process are strictly increasing even when the clock stands still.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

_RANDOM_MAX = (1 << 80) - 1
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # every 10-bit value, as 2 characters


def _encode(value: int) -> str:
    """A 130-bit value as 26 Crockford base32 characters, ten bits at a time."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])


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
            return _encode((ms << 80) | self._last_random)
