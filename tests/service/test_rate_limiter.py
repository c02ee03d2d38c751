"""The service's token buckets (``arena.service.auth.RateLimiter``): bounded memory without
letting a flood of new client addresses reset the limits of the clients already blocked."""

from __future__ import annotations

import pytest

from arena.service.auth import RateLimiter


def test_a_flood_of_new_addresses_does_not_unblock_a_blocked_one() -> None:
    limiter = RateLimiter(2, max_keys=8)
    assert limiter.take("guesser") == 0 and limiter.take("guesser") == 0
    assert limiter.take("guesser") > 0  # blocked: both attempts of the minute spent
    for n in range(100):  # many addresses, one attempt each: far more keys than kept
        assert limiter.take(f"10.0.{n // 256}.{n % 256}") == 0
    assert limiter.blocked("guesser") > 0, "the flood reset the blocked client's bucket"
    assert len(limiter._buckets) <= 8


def test_an_attempt_counted_up_front_is_given_back() -> None:
    limiter = RateLimiter(1)
    assert limiter.take("client") == 0
    assert limiter.take("client") > 0  # the one attempt is in flight
    limiter.refund("client")  # it proved good
    assert limiter.take("client") == 0
    limiter.refund("client")
    limiter.refund("client")  # never above the burst
    assert limiter.take("client") == 0 and limiter.take("client") > 0


def test_an_attempt_is_kept_only_when_its_credential_is_refused() -> None:
    limiter = RateLimiter(1)
    assert limiter.take("client") == 0
    with limiter.kept_if_refused("client"):
        pass  # a good credential
    assert limiter.take("client") == 0, "a good attempt was not given back"
    with limiter.kept_if_refused("client") as attempt:
        attempt.refuse()
    assert limiter.take("client") > 0, "a refused credential was given back"


def test_an_attempt_that_fails_on_our_side_is_given_back() -> None:
    limiter = RateLimiter(1)
    assert limiter.take("client") == 0
    with pytest.raises(ConnectionError), limiter.kept_if_refused("client"):
        raise ConnectionError("the database went away")
    assert limiter.take("client") == 0, "our failure cost the client an attempt"
