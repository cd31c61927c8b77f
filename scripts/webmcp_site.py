"""A shop's order page that offers page tools (WebMCP), for scripts/agent_bench.py's webmcp task.

One page on 127.0.0.1 registers three tools with `document.modelContext.registerTool`:
search_products (read-only), add_to_cart and checkout, whose `execute` calls the shop's JSON API
and shows what it did on the page. The server keeps the searches, the cart and the orders in
memory, so that the task's steps are checked in the shop's own state, outside both MCP servers.
Threads: a ThreadingHTTPServer's serving thread and one thread per request; the Shop is under its lock.

    with WebMcpSite.serve() as (base, shop): …   # a fresh shop, on a free port
"""

import contextlib
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from bench import QuietHandler

PRODUCTS = [
    {"id": "p01", "name": "Storm lantern", "price": 19.9},
    {"id": "p02", "name": "Paper lantern", "price": 4.5},
    {"id": "p03", "name": "Head torch", "price": 24.0},
    {"id": "p04", "name": "Camping stove", "price": 42.0},
    {"id": "p05", "name": "Water bottle", "price": 9.5},
    {"id": "p06", "name": "Sleeping bag", "price": 79.0},
    {"id": "p07", "name": "Tent pegs (12)", "price": 6.0},
    {"id": "p08", "name": "Rain poncho", "price": 12.5},
]

PAGE = """<!doctype html><meta charset="utf-8"><title>Corner Shop: order</title><link rel="icon" href="data:,">
<h1>Corner Shop</h1>
<section aria-label="Results"><h2>Products</h2><ul id="results"></ul></section>
<section aria-label="Cart"><h2>Cart</h2><ul id="cart"><li>empty</li></ul></section>
<section aria-label="Order" id="order"></section>
<script>
async function api(path, body) {
  const r = await fetch(path, body ? {method: 'POST', headers: {'Content-Type': 'application/json'},
                                      body: JSON.stringify(body)} : {});
  const data = await r.json();
  if (!r.ok) throw new Error(data.error);
  return data;
}
function items(list, line) {
  return list.map(x => { const li = document.createElement('li'); li.textContent = line(x); return li; });
}
const mc = document.modelContext;
mc.registerTool({name: 'search_products', description: 'Find products by name.',
  inputSchema: {type: 'object', properties: {query: {type: 'string'}}, required: ['query']},
  annotations: {readOnlyHint: true},
  execute: async ({query}) => {
    const found = await api('/api/products?q=' + encodeURIComponent(query));
    document.getElementById('results').replaceChildren(...items(found, p => `${p.name}: ${p.price.toFixed(2)}`));
    return {content: [{type: 'text', text: JSON.stringify(found)}]};
  }});
mc.registerTool({name: 'add_to_cart', description: 'Add a product to the cart.',
  inputSchema: {type: 'object', properties: {productId: {type: 'string'}, quantity: {type: 'integer', minimum: 1}},
                required: ['productId', 'quantity']},
  execute: async ({productId, quantity}) => {
    const cart = await api('/api/cart', {productId, quantity});
    document.getElementById('cart').replaceChildren(...items(cart.lines, l => `${l.quantity} x ${l.name}`));
    return {content: [{type: 'text', text: `Cart total ${cart.total.toFixed(2)}`}]};
  }});
mc.registerTool({name: 'checkout', description: 'Place the order for the cart.',
  inputSchema: {type: 'object', properties: {name: {type: 'string'}}, required: ['name']},
  execute: async ({name}) => {
    const order = await api('/api/checkout', {name});
    const h = document.createElement('h2'), p = document.createElement('p');
    h.textContent = `Order ${order.id} confirmed`;
    p.textContent = `Thank you, ${order.name}. Total ${order.total.toFixed(2)}. Pickup code: ${order.pickupCode}.`;
    document.getElementById('order').replaceChildren(h, p);
    return {content: [{type: 'text', text: `Order ${order.id} placed`}]};
  }});
</script>"""


class Shop:
    """What the page's tools did, as the shop records it: searches, the cart, the orders."""

    def __init__(self):
        self.lock = threading.Lock()
        self.searches: list[str] = []
        self.cart: dict[str, int] = {}
        self.orders: list[dict] = []

    def cart_answer(self):
        lines = [{"productId": pid, "name": product(pid)["name"], "quantity": n} for pid, n in self.cart.items()]
        return {"lines": lines, "total": round(sum(product(pid)["price"] * n for pid, n in self.cart.items()), 2)}


def product(pid):
    return next((p for p in PRODUCTS if p["id"] == pid), None)


class _Handler(QuietHandler, BaseHTTPRequestHandler):
    shop: Shop

    def _send(self, status, body, kind="application/json"):
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/":
            return self._send(200, PAGE, "text/html; charset=utf-8")
        if url.path == "/api/products":
            query = parse_qs(url.query).get("q", [""])[0]
            with self.shop.lock:
                self.shop.searches.append(query)
            return self._send(200, [p for p in PRODUCTS if query.lower() in p["name"].lower()])
        self._send(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        shop = self.shop
        with shop.lock:
            if self.path == "/api/cart":
                if product(body.get("productId")) is None or not isinstance(body.get("quantity"), int):
                    return self._send(400, {"error": "unknown productId or a quantity that is not a number"})
                shop.cart[body["productId"]] = shop.cart.get(body["productId"], 0) + body["quantity"]
                return self._send(200, shop.cart_answer())
            if self.path == "/api/checkout":
                if not shop.cart or not body.get("name"):
                    return self._send(400, {"error": "an empty cart or no name"})
                order = {"id": f"A{1001 + len(shop.orders)}", "name": body["name"], "pickupCode": secrets.token_hex(3),
                         **shop.cart_answer()}
                shop.orders.append(order)
                shop.cart = {}
                return self._send(200, order)
        self._send(404, {"error": "not found"})


class WebMcpSite:
    @staticmethod
    @contextlib.contextmanager
    def serve():
        """A fresh shop behind a threaded HTTP server on 127.0.0.1: yields (base URL, the Shop)."""
        shop = Shop()
        server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"shop": shop}))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_port}/", shop
        finally:
            server.shutdown()
            server.server_close()
