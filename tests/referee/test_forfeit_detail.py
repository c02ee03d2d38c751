"""The detail of a table game several bots could not start names every offender; each
offender's own part reads back from it (a bot's "never played" line quotes its own error)."""

from __future__ import annotations

from referee.record import joint_forfeit_detail, offender_detail


def test_each_offender_reads_back_its_own_part() -> None:
    detail = joint_forfeit_detail(
        "b@1 could not start: exit 5\nlast output: boom; still b",
        [("c@2", 3, "c@2 could not start: exit 7"), ("a@1", 0, "a@1 failed the handshake")],
    )
    assert offender_detail(detail, 1, forfeit_seat=1) == (
        "b@1 could not start: exit 5\nlast output: boom; still b"
    )
    assert offender_detail(detail, 3, forfeit_seat=1) == "c@2 could not start: exit 7"
    assert offender_detail(detail, 0, forfeit_seat=1) == "a@1 failed the handshake"


def test_a_single_offenders_detail_is_all_its_own() -> None:
    detail = "crashed; it said (seat 2) nothing"
    assert offender_detail(detail, 2, forfeit_seat=2) == detail
    assert joint_forfeit_detail(detail, []) == detail


def test_the_stored_form_of_earlier_releases_reads_the_same() -> None:
    # Records stored before the detail had a function of its own joined the parts this way.
    stored = "x could not start; y (seat 2) also: y died; z (seat 0) also: z died"
    assert offender_detail(stored, 2, forfeit_seat=1) == "y died"
    assert offender_detail(stored, 0, forfeit_seat=1) == "z died"
    assert offender_detail(stored, 1, forfeit_seat=1) == "x could not start"
