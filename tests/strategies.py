"""Hypothesis strategies shared by the property tests."""

import uuid

from hypothesis import strategies as st

session_timeouts = st.integers(min_value=1, max_value=10**9)
unknown_ids = st.one_of(st.uuids(version=4).map(str), st.text(min_size=1, max_size=40))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text())
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)


def fresh_id():
    return str(uuid.uuid4())
