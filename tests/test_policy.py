"""The domain policy's matching, without a browser: canonical hosts and rules."""

import pytest
from hypothesis import given
from strategies import ipv4_spellings

from mcpbrowser.guards import DomainPolicy, canonical_host, host_of

pytestmark = pytest.mark.unit


@given(ipv4_spellings())
def test_every_numeric_spelling_of_an_ipv4_address_is_that_address(pair):
    dotted, spelled = pair
    assert canonical_host(spelled) == dotted
    assert not DomainPolicy(blocked=[dotted]).host_allowed(spelled)
    assert DomainPolicy(allowed=[spelled]).host_allowed(dotted)


@pytest.mark.parametrize("spelling, canonical", [
    ("LocalHost.", "localhost"), ("EXAMPLE.com.", "example.com"),
    ("[::ffff:127.0.0.1]", "127.0.0.1"), ("::ffff:7f00:1", "127.0.0.1"), ("[0:0:0:0:0:0:0:1]", "::1"),
    ("bücher.example", "xn--bcher-kva.example"), ("faß.de", "xn--fa-hia.de"),  # UTS 46, non-transitional
    ("256.1.1.1", "256.1.1.1"), ("1.2.3.4.5", "1.2.3.4.5"),  # not addresses: the browser refuses them
    ("", ""),
])
def test_canonical_spellings(spelling, canonical):
    assert canonical_host(spelling) == canonical


def test_rules_are_canonical_too():
    policy = DomainPolicy(allowed=["*.Bücher.Example.", "0x7f.1"], blocked=["LOCALHOST."])
    assert policy.allows("http://shop.xn--bcher-kva.example/") and policy.allows("http://SHOP.bücher.example./")
    assert not policy.allows("http://xn--bcher-kva.example/")  # a wildcard does not match the domain itself
    assert policy.allows("http://127.0.0.1:8080/") and policy.allows("http://[::ffff:7f00:1]/")
    assert not policy.allows("http://localhost/") and not policy.allows("http://LocalHost.:80/")
    assert host_of("http://[::ffff:7f00:1]:80/x") == "127.0.0.1" and host_of("not a url") == ""


def test_names_counts_only_rules_that_name_the_host():
    policy = DomainPolicy(allowed=["127.0.0.1", "*.internal"], block_private=True)
    assert policy.names("2130706433") and not policy.names("db.internal")
    policy.grant("LocalHost.")
    assert policy.names("localhost")
