import os

import pytest


def require_or_skip(available: bool, reason: str, env_var: str) -> None:
    """Skip a test whose tool is missing, unless CI demands the tool via ``env_var``."""
    if available:
        return
    if os.environ.get(env_var) == "1":
        pytest.fail(f"{reason} (and {env_var}=1 demands it)")
    pytest.skip(reason)
