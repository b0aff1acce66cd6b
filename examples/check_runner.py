"""What the example tests (test_examples.py, test_tinker_env.py, test_verifiers_env.py) share: a skip
(exit 77, CTest's SKIP_RETURN_CODE) unless a live `kbrl serve` is named or a framework is importable,
and a runner of named checks that reports each one and goes on, then exits non-zero if any failed."""
from __future__ import annotations

import os
import sys
import traceback

SKIP = 77


def require_server(test: str) -> str:
    """$KBRL_SERVE_URL, or exit 77 saying how to set it."""
    url = os.environ.get("KBRL_SERVE_URL")
    if not url:
        print(f"{test}: KBRL_SERVE_URL is not set; start `kbrl serve` and set it "
              "(e.g. KBRL_SERVE_URL=http://127.0.0.1:8750). Skipped.", file=sys.stderr)
        sys.exit(SKIP)
    return url


def missing_framework(test: str, what: str, error: Exception, require_var: str):
    """Exit for a framework that cannot be imported: 77 (skipped), or 1 where $require_var is 1 (CI)."""
    print(f"{test}: {what} is not importable with {sys.executable} ({error}); "
          "run bash .ci/setup-serve (needs PyPI). Skipped.", file=sys.stderr)
    sys.exit(1 if os.environ.get(require_var) == "1" else SKIP)


class Skipped(Exception):
    """A check that cannot run here (it names what is missing)."""


class Checks:
    """check(name, fn): runs fn, prints `ok name: <what fn returned>` or `FAIL name: <error>` and goes
    on. A check raising Skipped is skipped, or failed when `required` (CI: nothing may be skipped)."""

    def __init__(self, required: bool = False):
        self.required = required
        self.failures: list[str] = []
        self.skipped: list[str] = []

    def __call__(self, name: str, fn):
        try:
            print(f"ok   {name}: {fn()}", flush=True)
        except Skipped as e:
            (self.failures if self.required else self.skipped).append(name)
            print(f"{'FAIL' if self.required else 'skip'} {name}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on
            self.failures.append(name)
            print(f"FAIL {name}: {e!r}", flush=True)
            traceback.print_exc(limit=4)

    def finish(self, passed: str):
        """Prints the verdict and exits: 1 if a check failed, else 0."""
        if self.failures:
            print("FAILED: " + ", ".join(self.failures))
        else:
            print(passed + (f" but {', '.join(self.skipped)} (skipped)" if self.skipped else ""))
        sys.exit(1 if self.failures else 0)
