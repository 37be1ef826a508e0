"""Amazon Bedrock backend (CONTRACT §3); the code is moving into modules of this package."""

from agent.backends.bedrock.request import (
    TOOL_NAME_PATTERN,
    TOOL_NAME_RE,
    BedrockBackend,
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
