"""Amazon Bedrock adapter: boto3 `bedrock-runtime` `converse_stream` (docs/engine.md, "Backends").

* `request` – neutral messages and tools → the `converse_stream` arguments (`build_request`).
* `translate` – the stream's events → the four neutral event kinds (`Translator`).
* `errors` – ClientError, in-stream exceptions and transport failures → `BackendError`.
* `backend` – `BedrockBackend`: the shared boto3 client, timeouts and retries.

The public names are re-exported here, so `agent.backends.bedrock.BedrockBackend` (the `BACKENDS`
setting) and `from agent.backends.bedrock import ...` keep working.
"""

from agent.backends.bedrock.backend import BedrockBackend
from agent.backends.bedrock.request import (
    TOOL_NAME_PATTERN,
    TOOL_NAME_RE,
    build_request,
    sanitize_document_name,
    validate_tool_name,
    wire_messages,
    wire_tool_use_id,
)

__all__ = [
    "BedrockBackend",
    "TOOL_NAME_PATTERN",
    "TOOL_NAME_RE",
    "build_request",
    "sanitize_document_name",
    "validate_tool_name",
    "wire_messages",
    "wire_tool_use_id",
]
