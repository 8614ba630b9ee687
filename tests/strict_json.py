"""RFC 8259 JSON parsing for the CLI tests: a library module, so that no test module imports another."""

import json

__all__ = ["strict_json"]


def strict_json(text: str):
    """Parse RFC 8259 JSON: NaN / Infinity tokens are an error (Python's json accepts them by default)."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)
