"""Which hosts a session may reach: hosts in one canonical form, the domain lists, private and
metadata addresses (`DomainPolicy`, enforced by core/policy_proxy.py and session/network_policy.py).

Pure logic, and a lock in each DomainPolicy, so any thread may call it: session threads (request
routing), the policy proxy's connection threads, the core's pool (a session's opening)."""

import ipaddress
import threading
from urllib.parse import urlsplit

import idna

# A host is compared only in one canonical form, the one the browser itself puts on the
# wire, so that no other spelling of a blocked host gets through and no allowed host is
# refused for its spelling: lower case, no trailing dot, IDNA names as punycode (UTS 46,
# non-transitional, as Chromium does), IPv6 without brackets and compressed, an
# IPv4-mapped IPv6 address as its IPv4 address, and every numeric spelling of an IPv4
# address (2130706433, 0x7f.1, 0177.0.0.1, 127.1) as dotted decimal (the WHATWG URL rules).


def _ipv4_part(text):
    if text[:2] in ("0x", "0X"):
        digits, base = text[2:], 16
    elif len(text) > 1 and text[0] == "0":
        digits, base = text[1:], 8
    else:
        digits, base = text, 10
    if digits == "":
        return 0  # "0x" alone is zero in the URL standard
    try:
        return int(digits, base) if digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def _ipv4_number(host):
    """The IPv4 address a host spells as a number, or None when it is a name."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not 1 <= len(parts) <= 4 or any(p == "" for p in parts):
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n * 256 ** (3 - i)
    return value


def canonical_host(host):
    """The one spelling of `host` that rules are compared in (see above); "" stays ""."""
    host = (host or "").strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return host
        return str(address.ipv4_mapped or address)
    host = host.rstrip(".")
    number = _ipv4_number(host)
    if number is not None:
        return str(ipaddress.IPv4Address(number))
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except idna.IDNAError:
            pass  # not a valid name: the browser will not load it either; compare as given
    return host


def host_of(url):
    """The canonical host of a URL ("" when it has none)."""
    try:
        return canonical_host(urlsplit(url).hostname)
    except ValueError:  # urlsplit refuses some malformed IPv6 literals
        return ""


def canonical_pattern(pattern):
    """A rule in canonical form: `*.` kept in front of a canonical host."""
    pattern = pattern.strip().lower()
    if pattern.startswith("*."):
        return "*." + canonical_host(pattern[2:])
    return canonical_host(pattern)


def domain_matches(host, pattern):
    """`example.com` matches itself only; `*.example.com` matches its subdomains, not itself.

    Both sides must be canonical (canonical_host, canonical_pattern)."""
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def is_private_address(address):
    """True for loopback, private, link-local, shared (CGNAT), unspecified and reserved addresses."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


# Cloud metadata services hand out the machine's credentials to anyone who asks from it:
# 169.254.169.254 (AWS, Google Cloud, Azure, OpenStack, DigitalOcean), 169.254.170.2 (AWS ECS),
# fd00:ec2::254 (AWS over IPv6), 100.100.100.200 (Alibaba Cloud); Google's names resolve to the
# first. A page can talk an agent into asking, so every session with a filtering proxy refuses them
# whatever names them, with or without --block-private-networks, and the rest of link-local with
# them. A session with no host rule has no proxy (not worth a Python hop per request): the container
# image turns --block-private-networks on, and docs/container.md tells cloud users to.
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog"})
_METADATA_NETWORKS = (ipaddress.ip_network("fd00:ec2::/32"), ipaddress.ip_network("100.100.100.200/32"))


def is_metadata_address(address):
    """True for link-local addresses and the other cloud metadata services' (see METADATA_NAMES)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_link_local or any(ip in net for net in _METADATA_NETWORKS if net.version == ip.version)


def is_loopback(host):
    host = canonical_host(host)
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# The policy proxy's answer to a refused plain-HTTP request carries this header, so the
# session can tell a refusal from a page that is really a 403.
BLOCKED_HEADER = "X-Mcpbrowser-Blocked"


class DomainPolicy:
    """What one session may load: the server's lists, narrowed by the session's, plus what the user allowed.

    Any thread may ask it (session threads, the policy proxy's connection threads)."""

    def __init__(self, allowed=(), blocked=(), schemes=("http", "https", "about", "data"), session_allowed=None,
                 block_private=False):
        self.allowed = tuple(canonical_pattern(p) for p in allowed)
        self.blocked = tuple(canonical_pattern(p) for p in blocked)
        self.schemes = tuple(schemes)
        self.session_allowed = tuple(canonical_pattern(p) for p in session_allowed) if session_allowed else None
        self.block_private = block_private  # refuse hosts that resolve to private addresses (see names)
        self.granted = set()  # hosts the user accepted for this session (--ask-new-domains)
        self._lock = threading.Lock()

    @property
    def restricts_hosts(self):
        return bool(self.allowed or self.blocked or self.session_allowed or self.block_private)

    def narrow(self, session_allowed):
        """Add a session's own allowedDomains (a pooled session gets them when handed out)."""
        self.session_allowed = tuple(canonical_pattern(p) for p in session_allowed)

    def grant(self, host):
        with self._lock:
            self.granted.add(canonical_host(host))

    def scheme_allowed(self, url):
        return urlsplit(url).scheme.lower() in self.schemes

    def blocks(self, host):
        """Whether --blocked-domains names `host`: refused whatever anyone allows (a person's grant included)."""
        return any(domain_matches(canonical_host(host), p) for p in self.blocked)

    def host_allowed(self, host):
        """Blocked always wins; then every list that exists must allow the host (so narrowing never widens)."""
        host = canonical_host(host)
        if self.blocks(host):
            return False
        with self._lock:
            if host in self.granted:
                return True
        if self.allowed and not any(domain_matches(host, p) for p in self.allowed):
            return False
        if self.session_allowed is not None and not any(domain_matches(host, p) for p in self.session_allowed):
            return False
        return True

    def narrowed_out(self, host):
        """True when only the session's own allowedDomains leave `host` out: the server's lists allow it."""
        host = canonical_host(host)
        return self.session_allowed is not None and not any(domain_matches(host, p) for p in self.session_allowed) \
            and not self.blocks(host) and (not self.allowed or any(domain_matches(host, p) for p in self.allowed))

    def names(self, host):
        """True when a server allow rule or a user's grant names this host itself (wildcards do not):
        --block-private-networks lets such a host reach a private address. A session's own
        allowedDomains do not count: the agent chooses them, and they narrow, never widen."""
        host = canonical_host(host)
        with self._lock:
            if host in self.granted:
                return True
        return host in self.allowed

    def allows(self, url):
        """True for a URL this session may request (scheme and host)."""
        if not self.scheme_allowed(url):
            return False
        scheme = urlsplit(url).scheme.lower()
        if scheme in ("about", "data", "blob"):
            return True  # no host: nothing leaves the browser
        return self.host_allowed(host_of(url))


