"""Passwords, login sessions, CSRF tokens and rate limits of the arena server.

- Passwords are hashed with Argon2id (``argon2-cffi``); API tokens are random and stored as
  sha256 (:mod:`arena.db.accounts`).
- A login session is a cookie ``author_id.token_id.expiry.nonce.signature`` signed with
  HMAC-SHA256 under the server's secret: nothing to store, and a forged or expired cookie is
  simply refused. The signature also covers the credential the session was made from (the
  stored hash of the API token used to sign in, or the author's password hash; ``token_id``
  0 for a password sign-in), and the server checks on every request that this credential is
  still good: a revoked or expired token, a changed password or a disabled author ends the
  session. Signing out ends the cookie in this server process (:meth:`Signer.end`); with no
  session storage, a copy taken before works again after a restart or on another server
  process until one of the above happens or it expires.
- CSRF: every form carries a token derived from the session (HMAC of the session cookie) or,
  before login, the double-submitted value of a random cookie; a form post whose token does
  not match is refused. Cookies are ``SameSite=Strict`` and ``HttpOnly`` as well.
- Rate limits are token buckets in memory, per API token (writes) and per client address
  (refused credentials): the 429 carries ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from arena.db import MAX_ID, is_utf8

SESSION_COOKIE = "kryt_session"
CSRF_COOKIE = "kryt_csrf"
MIN_PASSWORD_CHARS = 10
MAX_PASSWORD_CHARS = 1000

_hasher = PasswordHasher()


class PasswordError(ValueError):
    """A password that cannot be used (too short or too long)."""


def hash_password(password: str) -> str:
    """The Argon2id hash of a password (salted; parameters stored with it)."""
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS:
        raise PasswordError(
            f"a password needs {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters, "
            f"got {len(password)}"
        )
    if not is_utf8(password):
        raise PasswordError("a password must be text (it has an unpaired surrogate character)")
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; False for no hash, a wrong or malformed one."""
    if password_hash is None or len(password) > MAX_PASSWORD_CHARS or not is_utf8(password):
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def token_credential(token_hash: str) -> str:
    """What a session made from an API token is bound to: the token's stored hash."""
    return f"token:{token_hash}"


def password_credential(password_hash: str) -> str:
    """What a session made from a password is bound to: the author's password hash (a new
    password ends the sessions of the old one)."""
    return f"password:{password_hash}"


@dataclass(frozen=True, slots=True)
class SessionClaim:
    """What a well-formed, unexpired session cookie says; its signature is checked against
    the credential (:meth:`Signer.session_valid`), which the caller looks up by ``token_id``
    (0: the author's password)."""

    author_id: int
    token_id: int
    expires: int
    cookie: str


class Signer:
    """Signs and checks login sessions and CSRF tokens with one server secret."""

    MAX_ENDED = 100_000
    """Signed-out sessions remembered (bounded memory; expired ones are dropped first)."""

    def __init__(self, secret: str) -> None:
        self._key = hashlib.sha256(
            (secret or secrets.token_hex(32)).encode("utf-8", "surrogateescape")
        ).digest()
        self._ended: dict[str, int] = {}
        self._lock = threading.Lock()

    def _mac(self, message: str) -> str:
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()

    def _session_mac(self, body: str, credential: str) -> str:
        digest = hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()
        return self._mac(f"session:{body}:{digest}")

    def session(
        self, author_id: int, lifetime_s: float, *, token_id: int | None, credential: str
    ) -> str:
        """A session cookie value for ``author_id`` valid ``lifetime_s`` seconds, bound to
        the credential it was made from: the token ``token_id`` (:func:`token_credential`)
        or, with ``token_id`` None, the password (:func:`password_credential`)."""
        expiry = int(time.time() + lifetime_s)
        # The nonce tells sessions apart: signing out ends this one, not the next sign-in.
        body = f"{author_id}.{token_id or 0}.{expiry}.{secrets.token_hex(8)}"
        return f"{body}.{self._session_mac(body, credential)}"

    def claim(self, cookie: str | None) -> SessionClaim | None:
        """What a well-formed, unexpired and not signed-out session cookie claims (its
        signature is not checked yet: that needs the credential), else None."""
        if not cookie or len(cookie) > 200:
            return None
        parts = cookie.split(".")
        # Ids and the expiry are at most 12 ASCII digits, and the ids fit the databases'
        # integer columns: a larger number (which no cookie of ours holds) overflowed them
        # when the ids were looked up.
        if len(parts) != 5 or not all(
            p.isascii() and p.isdigit() and len(p) <= 12 for p in parts[:3]
        ):
            return None
        if int(parts[0]) > MAX_ID or int(parts[1]) > MAX_ID:
            return None
        if int(parts[2]) < time.time():
            return None
        with self._lock:
            if parts[4] in self._ended:
                return None
        return SessionClaim(int(parts[0]), int(parts[1]), int(parts[2]), cookie)

    def session_valid(self, claim: SessionClaim, credential: str) -> bool:
        """Whether the claim's cookie was signed by us for that credential (constant-time)."""
        body, _, mac = claim.cookie.rpartition(".")
        return _same(mac, self._session_mac(body, credential))

    def end(self, claim: SessionClaim) -> None:
        """Sign a session out: this process refuses its cookie (copies too) until it expires.
        Nothing is stored: after a restart, or on another server process, a copy taken
        before works again until it expires or its credential stops being valid."""
        mac = claim.cookie.rpartition(".")[2]
        now = time.time()
        with self._lock:
            if len(self._ended) >= self.MAX_ENDED:
                # Expired ones first; if that is not enough, those that expire soonest.
                live = sorted(((t, m) for m, t in self._ended.items() if t >= now), reverse=True)
                self._ended = {m: t for t, m in live[: self.MAX_ENDED * 9 // 10]}
            self._ended[mac] = claim.expires

    def csrf_for(self, binding: str) -> str:
        """The CSRF token of a session (or of a pre-login CSRF cookie)."""
        return self._mac("csrf:" + binding)

    def csrf_ok(self, binding: str | None, presented: str | None) -> bool:
        """True when ``presented`` is the CSRF token of ``binding`` (constant-time)."""
        if not binding or not presented:
            return False
        return _same(presented, self.csrf_for(binding))


def _same(presented: str, expected: str) -> bool:
    """Whether a client's ``presented`` text equals ``expected`` (constant-time). Compared as
    UTF-8 bytes: :func:`hmac.compare_digest` raises on a text with non-ASCII characters (a
    cookie or form field holding ``é``), which must be a mismatch, not a 500."""
    return hmac.compare_digest(
        presented.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class Attempt:
    """An attempt under :meth:`RateLimiter.kept_if_refused`."""

    def __init__(self) -> None:
        self.refused = False

    def refuse(self) -> None:
        """The credential was wrong: the request spent on it stays spent."""
        self.refused = True


class RateLimiter:
    """Token buckets: ``per_minute`` requests in a burst, refilled evenly over a minute."""

    def __init__(self, per_minute: int, *, max_keys: int = 100_000) -> None:
        self._capacity = float(per_minute)
        self._rate = per_minute / 60.0
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self._max_keys = max_keys

    def take(self, key: str) -> float:
        """Spend one request of ``key``; 0 when allowed, else seconds until the next one."""
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= self._max_keys:  # bounded memory under a flood
                    self._evict(now)
                bucket = self._buckets[key] = _Bucket(self._capacity, now)
            bucket.tokens = min(self._capacity, bucket.tokens + (now - bucket.stamp) * self._rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self._rate

    def _evict(self, now: float) -> None:
        """Make room: forget the buckets refilled by now (they hold nothing a new bucket
        would not), then, if that was not enough, the fullest half (a client that spent
        little). Clearing them all let a client with many addresses reset everyone's limits,
        the blocked ones' too."""

        def tokens(key: str) -> float:
            bucket = self._buckets[key]
            return bucket.tokens + (now - bucket.stamp) * self._rate

        for key in [key for key in self._buckets if tokens(key) >= self._capacity]:
            del self._buckets[key]
        if len(self._buckets) >= self._max_keys:
            fullest = sorted(self._buckets, key=tokens, reverse=True)
            for key in fullest[: len(fullest) // 2 + 1]:
                del self._buckets[key]

    def refund(self, key: str) -> None:
        """Give back one request of ``key`` spent by :meth:`take` (an attempt that is counted
        up front, while it is in flight, and only kept when it fails)."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is not None:
                bucket.tokens = min(self._capacity, bucket.tokens + 1.0)

    @contextmanager
    def kept_if_refused(self, key: str) -> Iterator[Attempt]:
        """The rest of an attempt whose request of ``key`` was spent by :meth:`take`: the
        request is given back when the block ends, unless the block called
        :meth:`Attempt.refuse` (a wrong credential). Any other ending, an error of ours
        included, is not the caller's failure and costs nothing.

        Counted up front and given back, rather than counted on failure: attempts sent at
        once all count while they are in flight, so a burst of guesses gets no more checks
        than the limit allows.
        """
        attempt = Attempt()
        try:
            yield attempt
        finally:
            if not attempt.refused:
                self.refund(key)

    def blocked(self, key: str) -> float:
        """Seconds until ``key`` may try again without spending (0: not blocked)."""
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                return 0.0
            tokens = min(self._capacity, bucket.tokens + (now - bucket.stamp) * self._rate)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self._rate
