"""The config calls' keywords: one list of fields (the dataclasses), typed for users'
type checkers (jetwire.jetstream.config_kwargs, generated) and checked at run time."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from jetwire.jetstream import config_kwargs
from jetwire.jetstream._json import config_from_kwargs
from jetwire.jetstream.kv_models import KeyValueConfig
from jetwire.jetstream.models import ConsumerConfig, StreamConfig
from jetwire.jetstream.obj_models import ObjectStoreConfig

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [(StreamConfig, config_kwargs.StreamConfigFields), (ConsumerConfig, config_kwargs.ConsumerConfigFields),
         (KeyValueConfig, config_kwargs.KeyValueConfigFields),
         (ObjectStoreConfig, config_kwargs.ObjectStoreConfigFields)]


@pytest.mark.parametrize("cls, td", PAIRS)
def test_each_typed_dict_has_exactly_the_dataclass_fields(cls, td):
    fields = [f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")]
    assert list(typing.get_type_hints(td)) == fields
    assert td.__total__ is False


def test_the_generated_module_is_up_to_date():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_config_kwargs.py"), "--check"],
                         capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_misspelt_field_names_the_nearest_one():
    with pytest.raises(TypeError, match=r"StreamConfig has no field 'max_agee'; did you mean 'max_age'\?"):
        config_from_kwargs(StreamConfig, None, name="S", max_agee=1.0)
    with pytest.raises(TypeError, match="valid fields are: "):
        config_from_kwargs(ConsumerConfig, None, zzz=1)
