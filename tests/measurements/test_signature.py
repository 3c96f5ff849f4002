"""One Signature: its fields are declared once, and every record and schema carries them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import (
    SIGNATURE_FIELDS,
    Measurement,
    SignatureFields,
    make_signature,
    parse_measurement,
    signature_fields,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints, read_seqpoints, write_seqpoints


def test_a_signature_is_a_plain_tuple_of_three_or_four() -> None:
    assert make_signature(8, 128) == (8, 128, 0)
    assert make_signature(8, 128, 3, 900) == (8, 128, 3, 900)
    assert hash(make_signature(8, 128, 3)) == hash((8, 128, 3))
    assert signature_fields((8, 128)) == {"batch_size": 8, "seq_len": 128, "tgt_len": 0, "sum_sq_len": None}
    assert signature_fields((8, 128, 3, 900))["sum_sq_len"] == 900
    with pytest.raises(InputError):
        signature_fields((8,))


@pytest.mark.parametrize("record", [Measurement, SeqPoint])
def test_records_take_their_fields_from_the_one_declaration(record: type[SignatureFields]) -> None:
    names = [f.name for f in dataclasses.fields(record)]
    assert issubclass(record, SignatureFields)
    assert names[:5] == ["iteration", *SIGNATURE_FIELDS]


def test_schemas_name_the_same_fields(tmp_path: Path) -> None:
    # The file schemas forbid unknown fields and require the signature's, so records that set
    # every signature field read back whole only when the schemas name the same fields.
    sig = signature_fields((8, 128, 3, 900))
    m = Measurement(iteration=5, **sig, metrics={"time_s": 1.0})
    assert list(m.to_dict())[:5] == ["iteration", *SIGNATURE_FIELDS]
    assert parse_measurement(m.to_dict(), source="row", fix="measure again") == m
    point = SeqPoint(iteration=5, **sig, weight=10.0)
    path = write_seqpoints(SeqPoints(method="toy", n_iterations=10, points=(point,)), tmp_path / "sp.json")
    assert read_seqpoints(path).points == (point,)


def test_schedule_columns_are_the_signature_fields() -> None:
    packed = IterationSchedule.from_columns({"batch_size": [2], "seq_len": [8], "sum_sq_len": [40]},
                                            meta={"packed": True})
    assert packed.signature_columns() == SIGNATURE_FIELDS
