"""What a pasted credential looks like: the one home of that guess, so that no value that may be a secret is echoed.

``looks_like_credential`` is used where a NAME is expected (an environment variable, a file path) and a person may
have pasted the secret itself (``--token-env ghp_...``, ``token: {env: glpat-...}``): such a value is refused with
:data:`TOKEN_NOT_NAME` and never printed.
"""

from __future__ import annotations

import re

__all__ = ["TOKEN_NOT_NAME", "looks_like_credential"]

# Prefixes of credentials people paste by mistake: GitHub, GitLab, Slack, AWS, OpenAI-style keys, JWTs, PEM keys.
_TOKEN_PREFIXES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gloas-", "gldt-", "glrt-", "glptt-", "glcbt-",
    "glft-", "glimt-", "glsoat-", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "AKIA", "ASIA", "sk-", "eyJ", "-----BEGIN",
)  # fmt: skip
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/=-]{16,}")
TOKEN_NOT_NAME = "this looks like a token, not a variable name: give the NAME of the variable that holds it"


def looks_like_credential(text: str) -> bool:
    """A value that is likely a pasted credential: a known token prefix, or a long run of random-looking
    characters (digits mixed with letters, or mixed case, with no word separator in 16 characters or more)."""
    t = text.strip()
    if t.startswith(_TOKEN_PREFIXES):
        return True
    for run in _RANDOM_RUN.findall(t):
        digits = any(c.isdigit() for c in run)
        lower, upper = any(c.islower() for c in run), any(c.isupper() for c in run)
        if sum((digits, lower, upper)) >= 2 and len(set(run)) >= 10:
            return True
    return False
