"""One session's domain policy as its thread sees it: checks before a navigation, the proxy's refusals.

SESSION THREAD ONLY. The requests themselves are filtered by the session's PolicyProxy (core/policy_proxy.py) on its own
threads; this reads what it refused, as plain data, and asks the person about a new domain.
"""

from collections.abc import Callable
from typing import Any

from mcpbrowser.domains import DomainPolicy, host_of
from mcpbrowser.errors import DomainNotAllowed, InvalidParameters

# A session behind its own policy proxy on a browser that resolves names itself (a server without host rules of its own,
# so no --host-resolver-rules: policy_proxy.every_session_proxied): WebRTC looks an ICE server's name up in the system's
# DNS before its TCP reaches the proxy, so a forbidden name, or data spelt as one, would reach that name's nameserver.
# Chromium has no resolver rule per context; this init script, in every document of such a session, refuses an ICE
# server named by anything but an IP literal (one reaches the proxy unresolved). The configuration is read once into a
# copy that the browser then reads (a getter may not answer one thing to the check and another to the browser).
ICE_NAMES_GUARD = r"""(() => {
  const Native = window.RTCPeerConnection;
  if (!Native || Native.__mcpbGuarded) return;
  // The page's scripts run after this one and may replace any global or prototype method: what the guard calls is
  // taken now, and its regular expression carries the engine's own exec.
  const {apply, construct, defineProperty, getOwnPropertyDescriptor, ownKeys, getPrototypeOf, setPrototypeOf} = Reflect;
  const {create, assign} = Object, from = Array.from, isArray = Array.isArray, text = String, Refused = DOMException;
  const test = RegExp.prototype.test, exec = RegExp.prototype.exec;
  // After the scheme, up to the query: an address and maybe a port, and nothing else. Whatever else the browser's
  // parser might make of it (a user part, a slash, a space, a name) is not looked at: it is refused.
  // An address as the browser's parser reads one, and nothing a resolver would take for a name: an IPv4 one's octets
  // 0-255 without leading zeros (999.1.2.3 or 010.0.0.1 are names to it, looked up), an IPv6 one hex groups and
  // colons, maybe ending in such an IPv4 one (no other dot, no other letter).
  const octet = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)', v4 = `(?:${octet}\\.){3}${octet}`;
  const ip = `(?:${v4}|(?:[0-9a-f]{0,4}:){2,7}(?:[0-9a-f]{1,4}|${v4})?)`;
  const literal = new RegExp(`^[a-z]+:(?:${v4}|\\[${ip}\\])(?::\\d{1,5})?(?:\\?[\\s\\S]*)?$`, 'i');
  defineProperty(literal, 'exec', {value: exec});
  const strings = (value) => value === undefined ? undefined : isArray(value) ? from(value, (v) => text(v))
    : text(value);
  const check = (urls) => {  // by index: an array's iterator is the page's to replace
    const all = urls === undefined ? [] : isArray(urls) ? urls : [urls];
    for (let i = 0; i < all.length; i++) {
      const url = all[i];
      if (!apply(test, literal, [url]))
        throw new Refused(`The ICE server ${url} is refused: this browser session's domain policy lets no page ` +
                          'look a name up past its proxy (give the server by its IP address).', 'NotAllowedError');
    }
  };
  // Each member read once into a copy of ours (no prototype: no setter of the page's), which the browser then reads.
  const copied = (config) => {
    if (config === undefined || config === null) return config;
    const copy = assign(create(null), config), servers = config.iceServers;
    if (servers === undefined || servers === null) return copy;
    defineProperty(copy, 'iceServers', {value: from(servers, (server) => {
      const own = assign(create(null), server), urls = strings(server.urls), url = strings(server.url);
      check(urls);
      check(url);
      defineProperty(own, 'urls', {value: urls, enumerable: true});
      defineProperty(own, 'url', {value: url, enumerable: true});
      return own;
    }), enumerable: true});
    return copy;
  };
  const Guarded = function RTCPeerConnection(config, ...rest) {
    if (!new.target) return apply(Native, this, [config, ...rest]);  // the browser's TypeError
    return construct(Native, [copied(config), ...rest], new.target);
  };
  Guarded.prototype = Native.prototype;
  setPrototypeOf(Guarded, getPrototypeOf(Native));
  for (const key of ownKeys(Native)) {  // its statics (generateCertificate)
    if (key !== 'prototype' && key !== 'length' && key !== 'name')
      defineProperty(Guarded, key, getOwnPropertyDescriptor(Native, key));
  }
  defineProperty(Guarded, '__mcpbGuarded', {value: true});
  // A remote candidate by a name is looked up too (addIceCandidate, or a description's a=candidate lines): its address
  // must be an IP literal, as above; an empty one ends the candidates.
  const address = new RegExp(`^(?:a=)?candidate:\\S+ \\d+ \\S+ \\d+ ${ip} `, 'i');
  const named = new RegExp(`^a=candidate:(?!\\S+ \\d+ \\S+ \\d+ ${ip} )`, 'im');
  defineProperty(address, 'exec', {value: exec});
  defineProperty(named, 'exec', {value: exec});
  const refuse = (what) => {
    throw new Refused(`${what} is refused: this browser session's domain policy lets no page look a name up past ` +
                      'its proxy (give addresses).', 'NotAllowedError');
  };
  const candidate = (init) => {
    if (init === undefined || init === null) return init;
    const own = create(null), line = init.candidate;
    own.candidate = line === undefined || line === null ? line : text(line);
    own.sdpMid = init.sdpMid;
    own.sdpMLineIndex = init.sdpMLineIndex;
    own.usernameFragment = init.usernameFragment;
    if (own.candidate && !apply(test, address, [own.candidate])) refuse(`The candidate ${own.candidate}`);
    return own;
  };
  const description = (init) => {
    if (init === undefined || init === null) return init;
    const own = create(null), sdp = init.sdp;
    own.type = init.type;
    own.sdp = sdp === undefined || sdp === null ? sdp : text(sdp);
    if (own.sdp && apply(test, named, [own.sdp])) refuse('A description with a candidate by a name');
    return own;
  };
  const proto = Native.prototype;
  defineProperty(proto, 'constructor', {value: Guarded, writable: true, configurable: true});
  for (const [name, copy] of [['setConfiguration', copied], ['addIceCandidate', candidate],
                              ['setRemoteDescription', description], ['setLocalDescription', description]]) {
    const method = proto[name];
    if (typeof method !== 'function') continue;
    defineProperty(proto, name, {writable: true, configurable: true, enumerable: true, value: {
      [name](first, ...rest) { return apply(method, this, [copy(first), ...rest]); }}[name]});
  }
  for (const name of ['RTCPeerConnection', 'webkitRTCPeerConnection']) {
    const described = getOwnPropertyDescriptor(window, name);
    if (described) defineProperty(window, name, {...described, value: Guarded});
  }
})()"""


def _nobody_to_ask(session_id: str, host: str) -> None:
    raise DomainNotAllowed(f"{host} is not in the server's allowed domains.", session_id=session_id,
                           details={"domain": host})


class NetworkPolicy:
    """What this session may load, and what the proxy refused so far."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.policy = DomainPolicy()  # the opener sets the session's real one
        self.proxy: Any = None        # the session's PolicyProxy when a host rule applies
        # ask_user(session_id, host): returns when the person allows it, else raises DomainNotAllowed.
        self.ask_user: Callable[[str, str], None] = _nobody_to_ask

    def narrow(self, allowed_domains: list[str]) -> None:
        """Apply a session's own allowedDomains; the proxy holds the same policy, so its next request obeys."""
        self.policy.narrow(allowed_domains)

    def check_navigation(self, url: str) -> None:
        """Refuse a URL the policy forbids before any request leaves; may ask the person."""
        if not self.policy.scheme_allowed(url):
            scheme = url.split(":", 1)[0]
            raise InvalidParameters(
                f"The {scheme}: scheme is not allowed. Allowed: {', '.join(self.policy.schemes)} "
                f"(start the server with --url-schemes to add {scheme}).", session_id=self.session_id)
        if not self.policy.allows(url):
            host = host_of(url)
            if self.policy.blocks(host):  # no one's yes lets it through: the person is not asked
                raise DomainNotAllowed(f"{host} is in the server's blocked domains.", session_id=self.session_id,
                                       details={"domain": host})
            if self.policy.narrowed_out(host):  # the agent narrowed its own session: not the person's to widen
                raise DomainNotAllowed(f"{host} is not in this session's allowedDomains; the server allows it (a "
                                       "session created without them, or naming it, may open it).",
                                       session_id=self.session_id, details={"domain": host})
            self.ask_user(self.session_id, host)  # raises DomainNotAllowed unless the person accepts
            self.policy.grant(host)

    def allows(self, url: str) -> bool:
        """Whether this session may request `url` now (its scheme and host); a route asks before it answers."""
        return self.policy.allows(url)

    def shows_refusal(self, url: str, refusals_before: int) -> bool:
        """Whether a tab at `url` shows the proxy's refusal: a page of a host the policy forbids (plain HTTP), or the
        browser's error page once the proxy refused more than refusals_before (a tunnel: HTTPS). Another error page
        (a closed port, a name that does not resolve, a route's abort) is not the policy's."""
        if url.startswith("chrome-error:"):
            return self.refusals() > refusals_before
        return self.forbids_page(url)

    def forbids_page(self, url: str) -> bool:
        """Whether `url` is a web page of a host this session may not reach (a tab there shows the proxy's refusal)."""
        return url.split(":", 1)[0] in ("http", "https") and not self.allows(url)

    def allows_host(self, host: str) -> bool:
        """Whether this session may reach `host` (a cookie's domain) now."""
        return self.policy.host_allowed(host)

    def refusals(self) -> int:
        """How many requests the policy proxy has refused so far (0 without one)."""
        return self.proxy.refusals if self.proxy is not None else 0

    def refuses_download(self, url: str) -> bool:
        """A download from this URL breaks the policy; a blob: URL is judged by the page that made it."""
        inner = url[len("blob:"):] if url.startswith("blob:") else url
        return not self.policy.allows(inner) or self.refused(inner)

    def refused(self, url: str) -> bool:
        """The proxy refused a request to this URL's host."""
        return self.proxy is not None and self.proxy.was_refused(host_of(url))

    def blocked_error(self, url: str, action: str | None = None) -> DomainNotAllowed:
        """DOMAIN_NOT_ALLOWED for a navigation to `url` that the proxy refused somewhere on its way.

        The URL's own host when it was refused; else the hop that was (a redirect's), which is
        the proxy's latest refusal. Not the latest one outright: a page refused earlier may
        still send a late request (a retry, an error page's fetch) while this navigation runs.
        """
        host = host_of(url)
        if not self.refused(url):
            host = (self.proxy.last_refused if self.proxy is not None else None) or host
        ran = f" The {action} ran and sent the tab there: it shows the refusal (go_back returns)." if action else ""
        return DomainNotAllowed(f"{host} is not allowed: the request to it was blocked.{ran}",
                                session_id=self.session_id, details={"domain": host})

    def close(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
