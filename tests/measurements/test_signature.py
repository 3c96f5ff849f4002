"""One Signature: its fields are declared once, and every record and schema carries them."""

from __future__ import annotations

import dataclasses

import pytest

from seqpoint._signature import SIGNATURE_FIELDS, SignatureFields, make_signature, signature_fields
from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement
from seqpoint.measurements._schema import MeasurementSchema
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint
from seqpoint.selection._schema import SeqPointSchema


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


@pytest.mark.parametrize("schema", [MeasurementSchema, SeqPointSchema])
def test_schemas_name_the_same_fields(schema: type) -> None:
    assert list(schema.model_fields)[:5] == ["iteration", *SIGNATURE_FIELDS]


def test_schedule_columns_are_the_signature_fields() -> None:
    packed = IterationSchedule.from_columns({"batch_size": [2], "seq_len": [8], "sum_sq_len": [40]},
                                            meta={"packed": True})
    assert packed.signature_columns() == SIGNATURE_FIELDS
