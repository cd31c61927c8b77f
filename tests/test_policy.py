"""The domain policy's matching, without a browser: canonical hosts and rules."""

from types import SimpleNamespace

import pytest
from hypothesis import given
from strategies import ipv4_spellings

from mcpbrowser.core.policy_proxy import PolicyProxy, Refused
from mcpbrowser.domains import DomainPolicy, canonical_host, host_of, is_metadata_address, is_private_address

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


def test_a_sessions_own_allowed_domains_do_not_lift_the_private_block():
    """An agent (or a page talking one into it) names a private host in create_session's allowedDomains:
    --block-private-networks still refuses it; only the operator's --allowed-domains names hosts."""
    assert not DomainPolicy(block_private=True, session_allowed=["127.0.0.2", "10.0.0.5"]).names("127.0.0.2")
    assert DomainPolicy(allowed=["127.0.0.2"], block_private=True, session_allowed=["127.0.0.2"]).names("127.0.0.2")


@pytest.mark.parametrize("host", [
    "169.254.169.254", "2852039166", "0xa9.0xfe.0xa9.0xfe", "[::ffff:169.254.169.254]",  # spellings of one address
    "169.254.170.2", "[fd00:ec2::254]", "100.100.100.200", "[fe80::1]", "metadata.google.internal", "Metadata.Goog.",
])
@pytest.mark.parametrize("rules", [
    {"allowed": "host"}, {"allowed": "host", "block_private": True}, {"session_allowed": "host"},
    {"blocked": ["elsewhere.example"]},
])
def test_cloud_metadata_services_are_refused_whatever_names_them(host, rules):
    """The proxy's check, which every request of a restricted session passes before it connects:
    a metadata address is refused even when an allow rule names it. Addresses only: nothing is
    resolved over the network, and nothing connects."""
    named = canonical_host(host.strip("[]"))
    policy = DomainPolicy(**{k: [named] if v == "host" else v for k, v in rules.items()})
    proxy = PolicyProxy(policy)
    try:
        with pytest.raises(Refused):
            proxy.check(host.strip("[]"), 80)
        assert proxy.was_refused(named)
    finally:
        proxy.close()


def test_link_local_and_metadata_addresses():
    for address in ("169.254.169.254", "169.254.0.1", "fe80::1%eth0", "fd00:ec2::254", "::ffff:169.254.169.254",
                    "100.100.100.200"):
        assert is_metadata_address(address), address
    for address in ("127.0.0.1", "10.0.0.1", "100.100.100.201", "fd00::1", "93.184.216.34", "::1"):
        assert not is_metadata_address(address), address


@pytest.mark.parametrize("host", ["badexample.com", "xexample.com", "evil-example.com", "example.com.evil.test",
                                  "example.comm", "wwwexample.com", "example.co", "notexample.com."])
def test_a_wildcard_does_not_match_a_look_alike_host(host):
    """`*.example.com` is example.com's subdomains: a host that merely ends in its letters is another site."""
    allowing, blocking = DomainPolicy(allowed=["*.example.com"]), DomainPolicy(blocked=["*.example.com"])
    assert not allowing.allows(f"http://{host}/") and blocking.allows(f"http://{host}/")
    # The twins that do belong to it, under the same policies.
    for twin in ("shop.example.com", "a.b.example.com", "SHOP.Example.COM."):
        assert allowing.allows(f"http://{twin}/") and not blocking.allows(f"http://{twin}/")
    assert not DomainPolicy(session_allowed=["*.example.com"]).host_allowed(host)
    # A plain name is only itself: none of the look-alikes, nor a subdomain.
    plain, plain_blocked = DomainPolicy(allowed=["example.com"]), DomainPolicy(blocked=["example.com"])
    assert not plain.allows(f"http://{host}/") and plain_blocked.allows(f"http://{host}/")
    assert plain.allows("http://EXAMPLE.com./") and not plain.allows("http://shop.example.com/")
    assert not plain_blocked.allows("http://example.com/") and plain_blocked.allows("http://shop.example.com/")


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1", "0.0.0.0",
                                     "100.64.0.1", "100.127.255.254", "224.0.0.1", "239.255.255.250", "240.0.0.1",
                                     "255.255.255.255", "::1", "::", "fc00::1", "fe80::1%eth0", "ff02::1",
                                     "::ffff:10.0.0.1", "::ffff:100.64.0.1", "2001:db8::1"])
def test_block_private_networks_refuses_every_address_that_is_not_public(address):
    """--block-private-networks: loopback, private, link-local, shared (CGNAT 100.64/10), multicast, reserved and
    documentation addresses are not the public internet (a proxy check that asked `is_private` let CGNAT and multicast
    through); a public address is."""
    assert is_private_address(address)
    assert not is_private_address("93.184.216.34") and not is_private_address("2606:2800:220:1:248:1893:25c8:1946")


def test_the_proxy_connects_to_the_address_it_checked_not_to_the_name_again(monkeypatch):
    """safety.md: the proxy resolves each name itself and checks the address it then connects to, so a name that
    re-resolves to a private address (DNS rebinding) is refused: what `check` hands the connection is the checked
    address, never the name (which the connection would look up a second time). Each lookup here answers the
    next of a rebinding name's answers; nothing is resolved over the network."""
    import socket

    answers = iter(["93.184.216.34", "127.0.0.1"])  # public when checked, loopback when asked again
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))])
    proxy = PolicyProxy(DomainPolicy(block_private=True))
    try:
        assert proxy.check("rebind.example", 80) == ("93.184.216.34", 80)
        with pytest.raises(Refused):  # the control: the second answer, checked, is refused
            proxy.check("rebind.example", 80)
    finally:
        proxy.close()


def test_under_block_private_a_wildcard_trusts_no_private_address_and_every_address_is_checked(monkeypatch):
    """safety.md: under --block-private-networks only a name the server's --allowed-domains spells out may reach a
    private address, not one a wildcard lets in; and the proxy checks the address it then connects to, whichever of
    a name's addresses that is (a metadata address too, whatever names it). Each name answers fixed addresses:
    nothing is resolved over the network, and nothing connects."""
    import socket

    answers = {"db.internal": ["10.0.0.5"], "named.internal": ["10.0.0.6"], "pub.example": ["93.184.216.34"],
               "two.example": ["127.0.0.1", "93.184.216.34"], "meta.internal": ["169.254.169.254", "10.0.0.7"]}
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in answers[host]])
    policy = DomainPolicy(allowed=["*.internal", "named.internal", "meta.internal", "*.example"], block_private=True)
    proxy = PolicyProxy(policy)
    try:
        assert proxy.check("named.internal", 80) == ("10.0.0.6", 80)  # the controls: named, and public
        assert proxy.check("pub.example", 80) == ("93.184.216.34", 80)
        for host in ("db.internal", "two.example", "meta.internal"):  # meta.internal: named, but metadata first
            with pytest.raises(Refused):
                proxy.check(host, 80)
            assert proxy.was_refused(host)
    finally:
        proxy.close()


def test_a_navigations_refusal_names_its_own_host_else_the_proxys_latest():
    """network_policy.blocked_error: the DOMAIN_NOT_ALLOWED of a navigation the proxy refused names the URL's own
    host when that was refused, not the latest refusal (a page refused earlier may send a late request meanwhile);
    else the hop that was (a redirect's), the proxy's latest."""
    from mcpbrowser.session.network_policy import NetworkPolicy

    network = NetworkPolicy("s")
    network.proxy = SimpleNamespace(was_refused=lambda host: host == "refused.example", last_refused="late.example")
    assert network.blocked_error("http://refused.example/x").details["domain"] == "refused.example"
    assert network.blocked_error("http://allowed.example/hop").details["domain"] == "late.example"


def test_a_host_only_the_sessions_own_allowed_domains_leave_out_is_refused_naming_that_list():
    """safety.md: a session's allowedDomains narrow the server's lists. A host the server allows but the session's own
    list leaves out is refused at once, naming the session's list (it said "not in the server's allowed domains",
    which is untrue), and the person is not asked to widen what the agent narrowed; a host the server leaves out is
    the person's to allow, as before."""
    from mcpbrowser.errors import DomainNotAllowed
    from mcpbrowser.session.network_policy import NetworkPolicy

    asked = []
    network = NetworkPolicy("s")
    network.policy = DomainPolicy(allowed=["127.0.0.1", "allowed.example"], session_allowed=["allowed.example"])
    network.ask_user = lambda session_id, host: asked.append(host)  # the person says yes
    with pytest.raises(DomainNotAllowed) as refused:
        network.check_navigation("http://127.0.0.1:8000/")
    assert "this session's allowedDomains" in str(refused.value) and "server" not in str(refused.value).split(";")[0]
    assert asked == [] and refused.value.details["domain"] == "127.0.0.1"
    network.check_navigation("http://elsewhere.example/")  # the server's list leaves it out: the person is asked
    assert asked == ["elsewhere.example"]
    network.check_navigation("http://allowed.example/")  # the control: both lists allow it


def test_a_download_is_refused_by_the_policy_or_by_the_proxy_having_refused_its_host():
    """The downloads' check behind the proxy (session/downloads.py saves within the domain policy): a URL the policy
    forbids, a blob: made by a page of a forbidden origin, or a host the proxy refused already."""
    from mcpbrowser.session.network_policy import NetworkPolicy

    network = NetworkPolicy("s")
    network.policy = DomainPolicy(allowed=["127.0.0.1", "allowed.example"])
    network.proxy = SimpleNamespace(was_refused=lambda host: host == "allowed.example")
    assert not network.refuses_download("http://127.0.0.1:8000/file.bin")  # the control
    assert network.refuses_download("http://elsewhere.example/file.bin")
    assert network.refuses_download("blob:http://elsewhere.example/5a2c")
    assert network.refuses_download("http://allowed.example/file.bin")  # allowed, but the proxy refused it
