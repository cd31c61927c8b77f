"""Tool argument schemas, their validation, and tool answers as JSON text; pure functions for any thread.

We enforce the whole schema a tool declares, and publish what a model needs of it (`published`). Only the
subset our tools use is supported (type, enum, minimum, maximum, minLength, maxLength, pattern, minItems,
items, required, additionalProperties=false): validation stays fast and free of the jsonschema import."""

import json
import re

from mcpbrowser.errors import InvalidParameters

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def string(description, **extra):
    return {"type": "string", "description": description, **extra}


def integer(description, minimum=None, maximum=None):
    out = {"type": "integer", "description": description} if description else {"type": "integer"}
    bounds = {"minimum": minimum, "maximum": maximum}
    return {**out, **{rule: bound for rule, bound in bounds.items() if bound is not None}}


def number(description, minimum=None, maximum=None):
    return {**integer(description, minimum, maximum), "type": "number"}


def boolean(description):
    return {"type": "boolean", "description": description}


def obj(properties, required=()):
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def result(properties, required=()):
    """An answer's output schema: an object of these properties, the required ones named."""
    return {"type": "object", "properties": properties, "required": list(required)}


def problems(schema, value, path="arguments"):
    """List every way `value` breaks `schema`, each naming where."""
    expected = schema.get("type")
    if expected is not None:
        kinds = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES[k](value) for k in kinds):
            return [f"{path} must be {' or '.join(kinds)}, got {_kind(value)}"]
    found = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path} must be one of {schema['enum']}, got {value!r}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        found.append(f"{path} must be >= {schema['minimum']}, got {value}")
    if "maximum" in schema and _TYPES["number"](value) and value > schema["maximum"]:
        found.append(f"{path} must be <= {schema['maximum']}, got {value}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        found.append(f"{path} must have at least {schema['minLength']} characters")
    if "maxLength" in schema and isinstance(value, str) and len(value) > schema["maxLength"]:
        found.append(f"{path} must have at most {schema['maxLength']} characters")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{path} must match {schema['pattern']}, got {value!r}")
    if "minItems" in schema and isinstance(value, list) and len(value) < schema["minItems"]:
        found.append(f"{path} must have at least {schema['minItems']} item(s)")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += problems(schema["items"], item, f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found += [f"{path}.{name} is required" for name in schema.get("required", ()) if name not in value]
        for name, item in value.items():
            if name in props:
                found += problems(props[name], item, f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{path}.{name} is not a known argument (known: {', '.join(props)})")
    return found


# A model reads tools/list on every turn, so every character of a schema is paid for again and again.
# These keywords guard against what the server refuses anyway, with an error naming the argument and the
# rule (`problems`), so the published schema leaves them out; the server still enforces them all.
_UNPUBLISHED = frozenset({"minimum", "maximum", "minLength", "maxLength", "pattern", "minItems",
                          "additionalProperties"})


# An enum too long to say in every tools/list, of names a model knows already (Playwright's resource types):
# enforced, its refusal names them all, the reference page lists them, tools/list does not.
_UNLISTED = "x-unlisted"


def unlisted_enum(values):
    return {"type": "string", "enum": list(values), _UNLISTED: True}


def published(schema, drop=()):
    """The schema as tools/list shows it: without `_UNPUBLISHED` keywords, an unlisted enum, an empty
    `required`, or the top-level properties named in `drop` (options of tool groups that are off)."""
    out = {}
    for key, value in schema.items():
        if key in _UNPUBLISHED or (key == "required" and not value) or key == _UNLISTED or (
                key == "enum" and schema.get(_UNLISTED)):
            continue
        if key == "properties":
            value = {name: published(item) for name, item in value.items() if name not in drop}
        elif key == "items" and isinstance(value, dict):
            value = published(value)
        out[key] = value
    return out


def validate(schema, value):
    """Raise InvalidParameters listing every problem; return the value unchanged when valid."""
    found = problems(schema, value)
    if found:
        raise InvalidParameters("; ".join(found), details={"problems": found})
    return value


def _kind(value):
    kinds = ("null", "boolean", "integer", "number", "string", "array", "object")
    return next((name for name in kinds if _TYPES[name](value)), type(value).__name__)


def compact_json(value):
    """A tool answer as the agent reads it (and the history stores it): JSON without padding,
    non-ASCII as is (a title's "—" is 1 character, not 6)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
