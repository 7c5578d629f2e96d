"""Nothing downloads at run time: model hubs offline, telemetry off.

Imported by the package before anything else, so every entry point (CLI, flows,
tests, library use) gets the same guarantees. A code path that still tries to reach
a hub then fails loudly instead of silently fetching weights.
"""

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_API_ENABLE_HTTP2": "false",
    "TOKENIZERS_PARALLELISM": "false",
}


def apply() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


apply()
